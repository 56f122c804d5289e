"""Report endpoints (docs/formulas.md): reliability, the weekly report, availability."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.choices import READERS
from apps.reports.availability import availability
from apps.reports.inputs import node_histories
from apps.reports.selectors import reliability_report
from apps.reports.serializers import (
    AvailabilitySerializer,
    ReliabilityQuerySerializer,
    ReliabilitySerializer,
    WeeklyQuerySerializer,
    WeeklySerializer,
    WindowQuerySerializer,
)
from apps.reports.weekly import weekly_report


def _query(serializer: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """The validated query parameters; a 400 names each bad one."""
    query = serializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return dict(query.validated_data)


class ReliabilityView(APIView):
    """`GET reports/reliability/?cluster=&start=&end=&job_nodes=`
    (docs/formulas.md, Reliability)."""

    roles = {"GET": READERS}

    @extend_schema(parameters=[ReliabilityQuerySerializer], responses=ReliabilitySerializer)
    def get(self, request: Request) -> Response:
        q = _query(ReliabilityQuerySerializer, request)
        report = reliability_report(
            cluster=q["cluster"],
            start=q["start"],
            end=q["end"],
            now=q["now"],
            job_nodes=q["job_nodes"],
        )
        return Response(ReliabilitySerializer(report).data)


class WeeklyView(APIView):
    """`GET reports/weekly/?cluster=&week=2026-W47` (docs/formulas.md, Weekly effective training
    rate). Without `week`, the last complete week, as the page and the export; `complete` is false
    for a week in progress."""

    roles = {"GET": READERS}

    @extend_schema(parameters=[WeeklyQuerySerializer], responses=WeeklySerializer)
    def get(self, request: Request) -> Response:
        q = _query(WeeklyQuerySerializer, request)
        report = weekly_report(cluster=q["cluster"], start=q["start"], now=q["now"])
        return Response(WeeklySerializer(report).data)


class AvailabilityView(APIView):
    """`GET reports/availability/?cluster=&start=&end=` (docs/formulas.md, GPU availability): the
    cluster's GPU-weighted availability and each node's."""

    roles = {"GET": READERS}

    @extend_schema(parameters=[WindowQuerySerializer], responses=AvailabilitySerializer)
    def get(self, request: Request) -> Response:
        q = _query(WindowQuerySerializer, request)
        cluster, start, end, now = q["cluster"], q["start"], q["end"], q["now"]
        report = availability(
            node_histories(cluster=cluster, start=start, end=end), start=start, end=end, now=now
        )
        answer = {"cluster": cluster.name, "start": start, "end": min(end, now), **report}
        return Response(AvailabilitySerializer(answer).data)
