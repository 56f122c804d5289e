"""Health endpoints: run checks, read runs and results, pre-flight a job (docs/api.md, Health)."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.choices import AGENTS, OPERATORS, READERS, Role
from apps.fleet.models import Node
from apps.fleet.scope import require_nodes
from apps.health.checks import SCHEDULED_KINDS
from apps.health.filters import ResultFilter, RunFilter
from apps.health.models import CheckResult, CheckRun
from apps.health.pipeline import pipeline_status
from apps.health.selectors import kinds_judged, node_admission
from apps.health.serializers import (
    AdmissionSerializer,
    PreflightSerializer,
    ResultSerializer,
    RunRequestSerializer,
    RunSerializer,
)
from apps.health.services import job_preflight, runs_queue
from apps.jobs.scope import job_for_write


class RunChecksView(APIView):
    """`POST health/run/`: queue checks now (all scheduled kinds by default); a kind already
    queued for the cluster, not yet started, is answered with that run, never queued twice."""

    roles = {"POST": OPERATORS}

    @extend_schema(
        request=RunRequestSerializer,
        responses={
            202: inline_serializer(
                "RunQueued",
                {
                    "run_id": serializers.IntegerField(help_text="the first kind's run"),
                    "run_ids": serializers.ListField(
                        child=serializers.IntegerField(), help_text="one run per kind asked"
                    ),
                    "already_queued": serializers.ListField(
                        child=serializers.IntegerField(),
                        help_text="those of `run_ids` that were queued, not yet started, "
                        "before this request: answered, never queued twice",
                    ),
                },
            )
        },
    )
    def post(self, request: Request) -> Response:
        data = RunRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        kinds = data.validated_data.get("checks") or list(SCHEDULED_KINDS)
        queued = runs_queue(
            cluster=data.validated_data["cluster"],
            kinds=kinds,
            requested_by=request.user.get_username(),
        )
        return Response(
            {
                "run_id": queued.runs[0].pk,
                "run_ids": [r.pk for r in queued.runs],
                "already_queued": queued.already_queued,
            },
            status=status.HTTP_202_ACCEPTED,
        )


class RunListView(generics.ListAPIView):
    """`GET health/runs/?cluster=&kind=`."""

    roles = {"GET": READERS}
    serializer_class = RunSerializer
    filterset_class = RunFilter
    queryset = CheckRun.objects.select_related("cluster").order_by("-queued_at", "-id")


class RunDetailView(generics.RetrieveAPIView):
    """`GET health/runs/{id}/`."""

    roles = {"GET": READERS}
    serializer_class = RunSerializer
    queryset = CheckRun.objects.select_related("cluster")


class ResultListView(generics.ListAPIView):
    """`GET health/results/?cluster=&status=&kind=&node=`: each target's current result. A
    warn or fail is written at every run; a pass only when it changes, so a pass's `at` is
    when it began, not when it was last judged. How fresh a result is is its check kind's
    last completed run on the cluster, `judged_at` beside it (docs/checks.md, How a check
    run works)."""

    roles = {"GET": READERS}
    serializer_class = ResultSerializer
    filterset_class = ResultFilter
    queryset = CheckResult.objects.select_related("cluster").order_by("-at", "kind", "target")

    def get_serializer_context(self) -> dict[str, Any]:
        context = dict(super().get_serializer_context())
        if not getattr(self, "swagger_fake_view", False):  # not while the schema is drawn
            context["judged"] = kinds_judged()  # one query, every cluster's kinds
        return context


def preflight_for_agent(answer: dict[str, object]) -> dict[str, object]:
    """What an agent token is told (agents never read): pass or fail and the names of the
    nodes that fail, once each, without their states or the checks they failed."""
    problems = answer["problems"]
    assert isinstance(problems, list)
    failing = sorted({str(p["node"]) for p in problems})
    return {"ok": answer["ok"], "problems": [{"node": name} for name in failing]}


class PreflightView(APIView):
    """`POST jobs/{id}/preflight/`: may this job start on its nodes? `{ok, problems: [{node,
    reason}]}`; an agent token is answered pass or fail and the names of the nodes that
    fail, `{ok, problems: [{node}]}`, never their states or the checks they failed (agents
    never read). The full answer is stored as the job's `preflight` result, for people."""

    roles = {"POST": OPERATORS | AGENTS}
    agent_scoped = True

    @extend_schema(request=None, responses=PreflightSerializer)
    def post(self, request: Request, pk: int) -> Response:
        job = job_for_write(request.user, pk)
        answer = job_preflight(job=job)
        if getattr(request.user, "role", None) == Role.AGENT:
            answer = preflight_for_agent(answer)
        return Response(answer)


class NodeAdmissionView(APIView):
    """`GET nodes/{hostname}/admission/`: may a job start on this node now? What
    `kuae-agent prolog` (Slurm's `Prolog=`) asks. Readers, and agents for their own nodes:
    the one read an agent token has, about its own node (a node-scoped token for its nodes,
    a cluster's for that cluster's)."""

    roles = {"GET": READERS | AGENTS}
    agent_scoped = True

    @extend_schema(responses=AdmissionSerializer)
    def get(self, request: Request, hostname: str) -> Response:
        require_nodes(request.user, [hostname])
        node = get_object_or_404(Node, hostname=hostname)
        return Response(node_admission(node=node))


class PipelineView(APIView):
    """`GET pipeline/`: when each of KUAE's own parts last worked and whether that is within
    its limit (docs/api.md, Pipeline; docs/operations.md, Watching the watcher)."""

    roles = {"GET": READERS}

    @extend_schema(
        responses=inline_serializer(
            "PipelineStatus",
            {
                "ok": serializers.BooleanField(
                    help_text="every part detection depends on is within its limit"
                ),
                "parts": serializers.ListField(
                    child=inline_serializer(
                        "PipelinePart",
                        {
                            "name": serializers.CharField(),
                            "cluster": serializers.CharField(required=False),
                            "last_ok_at": serializers.DateTimeField(allow_null=True),
                            "age_s": serializers.FloatField(allow_null=True),
                            "limit_s": serializers.FloatField(allow_null=True),
                            "ok": serializers.BooleanField(),
                            "detail": serializers.CharField(),
                        },
                    )
                ),
            },
        )
    )
    def get(self, request: Request) -> Response:
        status_now = pipeline_status()
        return Response(
            {"ok": status_now.ok, "parts": [part.as_dict() for part in status_now.parts]}
        )
