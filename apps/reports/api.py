"""Report endpoints (CONTRACT §2, §4): reliability, the weekly report, availability."""

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
from apps.reports.availability import availability
from apps.reports.inputs import node_histories
from apps.reports.selectors import reliability_report
from apps.reports.weekly import last_complete_week, parse_week, weekly_report

DEFAULT_WINDOW = dt.timedelta(days=30)
WINDOW_PARAMETERS = [
    OpenApiParameter("cluster", str),
    OpenApiParameter("start", dt.datetime),
    OpenApiParameter("end", dt.datetime),
]


def _cluster(request: Request, errors: dict[str, list[str]]) -> Cluster | None:
    """`?cluster=NAME`, or the only cluster when there is just one."""
    name = request.query_params.get("cluster")
    if name:
        cluster = Cluster.objects.filter(name=name).first()
        if cluster is None:
            errors["cluster"] = [f"unknown cluster {name!r}"]
        return cluster
    clusters = list(Cluster.objects.all()[:2])
    if len(clusters) == 1:
        return clusters[0]
    errors["cluster"] = ["required (there is more than one cluster, or none)"]
    return None


def window_params(request: Request) -> tuple[Cluster, dt.datetime, dt.datetime, dt.datetime]:
    """`cluster`, `start`, `end` from the query (defaults: the only cluster, the last 30
    days); a 400 names each bad parameter."""
    errors: dict[str, list[str]] = {}
    now = timezone.now()
    cluster = _cluster(request, errors)
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
            *WINDOW_PARAMETERS,
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


class WeeklyView(APIView):
    """`GET reports/weekly/?cluster=&week=2026-W47` (§4.2). Without `week`, the last complete
    week, as the page and the export (§6); `complete` is false for a week in progress."""

    roles = {"GET": READERS}

    @extend_schema(
        parameters=[
            OpenApiParameter("cluster", str),
            OpenApiParameter(
                "week", str, description="ISO week, e.g. 2026-W47 (default: the last complete one)"
            ),
        ],
        responses={200: dict},
    )
    def get(self, request: Request) -> Response:
        errors: dict[str, list[str]] = {}
        now = timezone.now()
        cluster = _cluster(request, errors)
        start = last_complete_week(now)
        if request.query_params.get("week"):
            try:
                start = parse_week(request.query_params["week"])
            except ValueError as exc:
                errors["week"] = [str(exc)]
            else:
                if start > now:
                    errors["week"] = ["is in the future"]
        if errors:
            raise serializers.ValidationError(errors)
        assert cluster is not None
        return Response(weekly_report(cluster=cluster, start=start, now=now))


class AvailabilityView(APIView):
    """`GET reports/availability/?cluster=&start=&end=` (§4.3): the cluster's GPU-weighted
    availability and each node's."""

    roles = {"GET": READERS}

    @extend_schema(
        parameters=WINDOW_PARAMETERS,
        responses={200: dict},
    )
    def get(self, request: Request) -> Response:
        cluster, start, end, now = window_params(request)
        report = availability(
            node_histories(cluster=cluster, start=start, end=end), start=start, end=end, now=now
        )
        return Response({"cluster": cluster.name, "start": start, "end": min(end, now), **report})
