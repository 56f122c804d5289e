"""Incident-side intake endpoints: Alertmanager alerts, Slurm job records."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.choices import AGENTS
from apps.incidents.services import alertmanager_ingest, slurm_ingest


class AlertmanagerView(APIView):
    """`POST ingest/alertmanager/`: Alertmanager's webhook (version 4)."""

    roles = {"POST": AGENTS}

    @extend_schema(request={"application/json": dict}, responses={200: dict})
    def post(self, request: Request) -> Response:
        return Response(alertmanager_ingest(payload=request.data))


class SlurmResultSerializer(serializers.Serializer):
    """Jobs created and updated, incidents opened."""

    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    incidents = serializers.IntegerField()


class SlurmIngestView(APIView):
    """`POST ingest/slurm/?cluster=NAME`: `sacct --json` / slurmrestd slurmdb job records."""

    roles = {"POST": AGENTS}

    @extend_schema(
        request={"application/json": dict},
        parameters=[OpenApiParameter("cluster", str, description="wins over each record's")],
        responses={200: SlurmResultSerializer},
    )
    def post(self, request: Request) -> Response:
        counts = slurm_ingest(
            cluster_name=request.query_params.get("cluster"), payload=request.data
        )
        return Response(SlurmResultSerializer(counts).data)
