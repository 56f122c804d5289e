"""Report endpoints (CONTRACT §2, §4): reliability."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.choices import READERS
from apps.common.timeutil import parse_ts
from apps.fleet.models import Cluster
from apps.reports.selectors import reliability_report

DEFAULT_WINDOW = dt.timedelta(days=30)


def window_params(request: Request) -> tuple[Cluster, dt.datetime, dt.datetime, dt.datetime]:
    """`cluster`, `start`, `end` from the query (defaults: the only cluster, the last 30
    days); a 400 names each bad parameter."""
    errors: dict[str, list[str]] = {}
    now = timezone.now()
    cluster = None
    name = request.query_params.get("cluster")
    if name:
        cluster = Cluster.objects.filter(name=name).first()
        if cluster is None:
            errors["cluster"] = [f"unknown cluster {name!r}"]
    else:
        clusters = list(Cluster.objects.all()[:2])
        if len(clusters) == 1:
            cluster = clusters[0]
        else:
            errors["cluster"] = ["required (there is more than one cluster, or none)"]
    bounds = {"start": now - DEFAULT_WINDOW, "end": now}
    for key in bounds:
        if request.query_params.get(key):
            try:
                bounds[key] = parse_ts(request.query_params[key])
            except ValueError as exc:
                errors[key] = [str(exc)]
    if not errors and bounds["end"] <= bounds["start"]:
        errors["end"] = ["must be after start"]
    if errors:
        raise serializers.ValidationError(errors)
    assert cluster is not None
    return cluster, bounds["start"], bounds["end"], now


class ReliabilityView(APIView):
    """`GET reports/reliability/?cluster=&start=&end=&job_nodes=` (§4.1)."""

    roles = {"GET": READERS}

    @extend_schema(
        parameters=[
            OpenApiParameter("cluster", str),
            OpenApiParameter("start", dt.datetime),
            OpenApiParameter("end", dt.datetime),
            OpenApiParameter("job_nodes", int, description="nodes of the projected job (128)"),
        ],
        responses={200: dict},
    )
    def get(self, request: Request) -> Response:
        cluster, start, end, now = window_params(request)
        try:
            job_nodes = int(request.query_params.get("job_nodes", 128))
            if job_nodes < 1:
                raise ValueError
        except ValueError as exc:
            raise serializers.ValidationError(
                {"job_nodes": ["must be a positive integer"]}
            ) from exc
        return Response(
            reliability_report(cluster=cluster, start=start, end=end, now=now, job_nodes=job_nodes)
        )
