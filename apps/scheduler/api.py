"""Scheduler endpoints: Slurm job records in (docs/integrations.md, 4. Slurm) and the
actuation log (docs/slurm.md, Actuation)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.choices import AGENTS, READERS
from apps.fleet.scope import require_cluster, scope_of
from apps.scheduler.filters import ActuationFilter
from apps.scheduler.selectors import actuation_list
from apps.scheduler.serializers import ActuationSerializer, SlurmResultSerializer
from apps.scheduler.services import slurm_ingest


class ActuationListView(generics.ListAPIView):
    """`GET actuations/?cluster=&node=&action=&result=`: every drain and resume KUAE asked
    of a scheduler — pending, done, failed or skipped (dry run, a person's drain left
    alone) — newest first."""

    roles = {"GET": READERS}
    serializer_class = ActuationSerializer
    filterset_class = ActuationFilter

    def get_queryset(self):  # noqa: ANN201
        return actuation_list()


class SlurmIngestView(APIView):
    """`POST ingest/slurm/?cluster=NAME`: `sacct --json` / slurmrestd slurmdb job records."""

    roles = {"POST": AGENTS}
    agent_scoped = True

    @extend_schema(
        request={"application/json": dict},
        parameters=[OpenApiParameter("cluster", str, description="wins over each record's")],
        responses={200: SlurmResultSerializer},
    )
    def post(self, request: Request) -> Response:
        if scope_of(request.user) is not None:  # a cluster's Slurm sync names its cluster
            require_cluster(request.user, request.query_params.get("cluster"))
        counts = slurm_ingest(
            cluster_name=request.query_params.get("cluster"), payload=request.data
        )
        return Response(SlurmResultSerializer(counts).data)
