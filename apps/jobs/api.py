"""Job endpoints: jobs, step metrics, checkpoints, phases (docs/api.md, Jobs)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable

from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.choices import AGENTS, OPERATORS, READERS
from apps.accounts.permissions import answers_objects
from apps.accounts.schema import AGENT_ACCEPTED, AGENT_JOB_ID, person_or_agent
from apps.common.parsers import FastJSONParser, LenientJSONParser
from apps.common.timeutil import parse_ts
from apps.fleet.scope import require_cluster, require_nodes, scope_of
from apps.jobs.filters import JobFilter
from apps.jobs.hang import Verdict
from apps.jobs.intake import parse_metric_batch
from apps.jobs.models import Checkpoint, Job, JobPhase
from apps.jobs.peaks import attach_peaks
from apps.jobs.phase_intake import parse_phase_batch
from apps.jobs.rank_intake import parse_rank_batch, parse_stall_batch
from apps.jobs.ranks import ranks_register
from apps.jobs.readers import job_incidents
from apps.jobs.scope import (
    job_for_write,
    require_job,
    require_job_change,
    require_job_nodes,
    require_whole_job,
    speaks_for_whole_job,
)
from apps.jobs.selectors import (
    MAX_POINTS_DEFAULT,
    MAX_POINTS_LIMIT,
    JobRanks,
    job_list,
    job_metric_series,
    job_ranks,
    job_verdict,
)
from apps.jobs.serializers import (
    AcceptedSerializer,
    CheckpointSerializer,
    JobRanksSerializer,
    JobSerializer,
    JobWriteSerializer,
    MetricBatchSerializer,
    MetricPointsSerializer,
    PhaseBatchSerializer,
    PhaseSerializer,
    RankBatchSerializer,
    RankRegisteredSerializer,
    StallBatchSerializer,
)
from apps.jobs.services import (
    checkpoint_record,
    job_by_external_id,
    job_create,
    job_metrics_ingest,
    job_phases_record,
    job_update,
)
from apps.jobs.stall_store import stalls_store

JOB_WRITERS = OPERATORS | AGENTS


def hostnames_by_job(job_ids: Iterable[int]) -> dict[int, list[str]]:
    """job id → sorted hostnames, in one query for a whole page of jobs."""
    through = Job.nodes.through
    out: dict[int, list[str]] = defaultdict(list)
    rows = through.objects.filter(job_id__in=list(job_ids)).values_list("job_id", "node__hostname")
    for job_id, hostname in rows.order_by("node__hostname"):
        out[job_id].append(hostname)
    return out


def _job_response(
    job: Job, code: int = status.HTTP_200_OK, request: Request | None = None
) -> Response:
    """The job as readers see it; an agent, who never reads, gets only its `id`."""
    if request is not None and not answers_objects(request.user):
        return Response({"id": job.pk}, status=code)
    context = {"hostnames": hostnames_by_job([job.pk]), "incidents": job_incidents([job.pk])}
    return Response(JobSerializer(job, context=context).data, status=code)


AGENT_LOOKUP_SHOWN = 10  # jobs an agent's lookup answers (newest first)


def agent_job_lookup(request: Request) -> Response:
    """`GET jobs/?external_id=&cluster=` for an agent (docs/agent.md: a training run's Reporter
    finds its job by Slurm's id): both parameters required, the cluster within the token's
    scope, a node agent's answer only the jobs that run on its nodes — and, as agents never
    read, only their ids, newest first."""
    external_id = request.query_params.get("external_id", "")
    cluster = request.query_params.get("cluster", "")
    missing = {
        name: ["an agent looks a job up by external_id and cluster"]
        for name, value in (("external_id", external_id), ("cluster", cluster))
        if not value
    }
    if missing:
        raise serializers.ValidationError(missing)
    require_cluster(request.user, cluster, whole=False)
    jobs = Job.objects.filter(cluster__name=cluster, external_id=external_id[:64])
    scope = scope_of(request.user)
    if scope is not None and scope.hostnames is not None:
        jobs = jobs.filter(nodes__hostname__in=list(scope.hostnames)).distinct()
    ids = list(jobs.order_by("-id").values_list("id", flat=True)[:AGENT_LOOKUP_SHOWN])
    results = [{"id": pk} for pk in ids]
    return Response({"count": len(results), "next": None, "previous": None, "results": results})


class JobListView(generics.ListAPIView):
    """`GET jobs/?cluster=&status=&external_id=&sort=` (paginated); `POST jobs/` registers a
    run. An agent may only look its job up (`agent_job_lookup`)."""

    roles = {"GET": READERS | AGENTS, "POST": JOB_WRITERS}
    agent_scoped = True
    serializer_class = JobSerializer
    filterset_class = JobFilter

    def get_queryset(self):  # noqa: ANN201
        return job_list()

    def get_serializer(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        if args and isinstance(args[0], list):
            kwargs.setdefault("context", self.get_serializer_context())
            ids = [job.pk for job in args[0]]
            kwargs["context"]["hostnames"] = hostnames_by_job(ids)
            kwargs["context"]["incidents"] = job_incidents(ids)
            attach_peaks(args[0])
        return super().get_serializer(*args, **kwargs)

    @extend_schema(
        description="Readers get the jobs. An agent token may only look its job up by "
        "`external_id` and `cluster` (both required; its own cluster, a node agent's only jobs "
        "on its nodes) and gets only their ids, newest first: `{count, next, previous, "
        "results: [{id}]}`."
    )
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        if not answers_objects(request.user):
            return agent_job_lookup(request)
        return super().get(request, *args, **kwargs)

    @extend_schema(
        description="Registers a training run; a known `external_id` in the cluster names that "
        "job, which is updated instead (201 created, 200 found). An agent gets only `{id}`.",
        request=JobWriteSerializer,
        responses={
            201: person_or_agent("Job", AGENT_JOB_ID),
            200: person_or_agent("Job", AGENT_JOB_ID),
        },
    )
    def post(self, request: Request) -> Response:
        data = JobWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        nodes = values.pop("nodes", ())
        require_job_nodes(request.user, values["cluster"], [n.hostname for n in nodes])
        if values.get("external_id"):  # a known external id updates that job: it too
            existing = job_by_external_id(
                cluster=values["cluster"], external_id=values["external_id"]
            )
            if existing is not None:
                require_job(request.user, existing)
                require_job_change(request.user, existing, values, nodes or None)
        job, created = job_create(cluster=values.pop("cluster"), nodes=nodes, **values)
        return _job_response(
            job, status.HTTP_201_CREATED if created else status.HTTP_200_OK, request
        )


class JobDetailView(APIView):
    """`GET jobs/{id}/`, `PATCH jobs/{id}/`."""

    roles = {"GET": READERS, "PATCH": JOB_WRITERS}
    agent_scoped = True

    @extend_schema(responses=JobSerializer)
    def get(self, request: Request, pk: int) -> Response:
        return _job_response(get_object_or_404(Job.objects.select_related("cluster"), pk=pk))

    @extend_schema(
        description="Changes a job's fields. A node's token may add its own nodes and mark "
        "the run running; ending the job, removing nodes and changing `gpu_count`, `n_params` "
        "or `flops_per_token` take a token that speaks for the whole job — a cluster's, or the "
        "node's that holds rank 0 (docs/operations.md, Agent tokens and scopes).",
        request=JobWriteSerializer,
        responses={200: person_or_agent("Job", AGENT_JOB_ID)},
    )
    def patch(self, request: Request, pk: int) -> Response:
        job = job_for_write(request.user, pk, Job.objects.select_related("cluster"))
        data = JobWriteSerializer(instance=job, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        values.pop("cluster", None)
        nodes = values.pop("nodes", None)
        if nodes is not None:
            require_job_nodes(request.user, job.cluster, [n.hostname for n in nodes])
        require_job_change(request.user, job, values, nodes)
        return _job_response(job_update(job=job, nodes=nodes, **values), request=request)


class JobMetricsView(APIView):
    """`POST jobs/{id}/metrics/` (agents) and `GET` the downsampled job-wide series."""

    roles = {"GET": READERS, "POST": AGENTS}
    agent_scoped = True
    parser_classes = [LenientJSONParser]

    @extend_schema(
        parameters=[
            OpenApiParameter("start", dt.datetime),
            OpenApiParameter("end", dt.datetime),
            OpenApiParameter("max_points", int),
        ],
        responses=MetricPointsSerializer,
    )
    def get(self, request: Request, pk: int) -> Response:
        job = get_object_or_404(Job.objects.select_related("cluster"), pk=pk)
        errors: dict[str, list[str]] = {}
        bounds: dict[str, dt.datetime | None] = {"start": None, "end": None}
        for key in bounds:
            if request.query_params.get(key):
                try:
                    bounds[key] = parse_ts(request.query_params[key])
                except ValueError as exc:
                    errors[key] = [str(exc)]
        max_points = MAX_POINTS_DEFAULT
        if request.query_params.get("max_points"):
            try:
                max_points = int(request.query_params["max_points"])
                if not 1 <= max_points <= MAX_POINTS_LIMIT:
                    raise ValueError
            except ValueError:
                errors["max_points"] = [f"must be an integer from 1 to {MAX_POINTS_LIMIT}"]
        if errors:
            raise serializers.ValidationError(errors)
        series = job_metric_series(job=job, max_points=max_points, **bounds)
        points = [
            {
                "ts": dt.datetime.fromtimestamp(ts, tz=dt.UTC).isoformat().replace("+00:00", "Z"),
                "step": step,
                "step_time_s": step_time,
                "tokens_per_s": tps,
                "loss": loss,
                "mfu": mfu,
            }
            for ts, step, step_time, tps, loss, mfu in zip(
                series["ts"],
                series["step"],
                series["step_time_s"],
                series["tokens_per_s"],
                series["loss"],
                series["mfu"],
                strict=True,
            )
        ]
        return Response({"points": points})

    @extend_schema(
        description="Step samples, all or nothing. A node's token sends its nodes' samples; "
        "job-wide samples (no `node`) only from the node that holds rank 0 once ranks are "
        "registered (docs/operations.md, Agent tokens and scopes).",
        request=MetricBatchSerializer,
        responses={202: AcceptedSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        job = job_for_write(request.user, pk, Job.objects.select_related("cluster"))
        samples = parse_metric_batch(request.data)
        require_nodes(request.user, {s.node for s in samples if s.node is not None})
        if any(s.node is None for s in samples):
            require_whole_job(request.user, job, "job-wide samples", before_ranks=True)
        accepted = job_metrics_ingest(job=job, samples=samples)
        return Response({"accepted": accepted}, status=status.HTTP_202_ACCEPTED)


class JobCheckpointsView(generics.ListAPIView):
    """`POST jobs/{id}/checkpoints/` (agents); `GET` lists them."""

    roles = {"GET": READERS, "POST": AGENTS}
    agent_scoped = True
    serializer_class = CheckpointSerializer

    queryset = Checkpoint.objects.none()

    def get_queryset(self):  # noqa: ANN201
        if getattr(self, "swagger_fake_view", False):
            return Checkpoint.objects.none()
        return get_object_or_404(Job, pk=self.kwargs["pk"]).checkpoints.order_by("-saved_at")

    @extend_schema(
        request=CheckpointSerializer,
        responses={
            201: person_or_agent("Checkpoint", AGENT_ACCEPTED),
            200: person_or_agent("Checkpoint", AGENT_ACCEPTED),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        job = job_for_write(request.user, pk, Job.objects.all())
        data = CheckpointSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        checkpoint, created = checkpoint_record(job=job, **data.validated_data)
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        if not answers_objects(request.user):
            return Response({"accepted": 1}, status=code)
        return Response(CheckpointSerializer(checkpoint).data, status=code)


class JobPhasesView(generics.ListAPIView):
    """`POST jobs/{id}/phases/` (agents, operators): time the run spent not training;
    `GET` lists them, oldest first (docs/agent.md, Phases)."""

    roles = {"GET": READERS, "POST": JOB_WRITERS}
    agent_scoped = True
    serializer_class = PhaseSerializer
    parser_classes = [LenientJSONParser]

    queryset = JobPhase.objects.none()

    def get_queryset(self):  # noqa: ANN201
        if getattr(self, "swagger_fake_view", False):
            return JobPhase.objects.none()
        job = get_object_or_404(Job, pk=self.kwargs["pk"])
        return job.phases.select_related("node").order_by("start", "name")

    @extend_schema(
        description="Phases, all or nothing; each problem named `phases[i].field`. A phase "
        "is identified by (job, name, start): sent again it updates `end`, `step` and `node`. "
        "A node's token writes only for a job on its nodes, and names only its own nodes.",
        request=PhaseBatchSerializer,
        responses={202: AcceptedSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        job = job_for_write(request.user, pk, Job.objects.select_related("cluster"))
        phases = parse_phase_batch(request.data)
        require_nodes(request.user, {p.node for p in phases if p.node is not None})
        if any(p.node is None for p in phases):  # as job-wide samples
            require_whole_job(request.user, job, "job-wide phases", before_ranks=True)
        accepted = job_phases_record(job=job, phases=phases)
        return Response({"accepted": accepted}, status=status.HTTP_202_ACCEPTED)


def _attempt_asked(request: Request) -> int | None:
    """`?attempt=N` (a whole number from 1), or None when not given."""
    raw = request.query_params.get("attempt")
    if raw in (None, ""):
        return None
    try:
        attempt = int(raw)
        if attempt < 1:
            raise ValueError
    except ValueError as exc:
        raise serializers.ValidationError({"attempt": ["must be a whole number from 1"]}) from exc
    return attempt


def ranks_answer(job: Job, ranks: JobRanks, verdict: Verdict) -> dict[str, object]:
    """The `GET jobs/{id}/ranks/` answer: plain dicts, built once per rank (10,000 ranks
    share a few stacks, listed once by digest)."""
    rows = []
    for r in ranks.rows:
        report = None
        if r["report_at"] is not None:
            report = {
                "ts": r["report_at"],
                "last_step": r["last_step"],
                "stalled_s": r["stalled_s"],
                "stalled_since": r["stalled_since"],
                "first_report_at": r["first_report_at"],
                "in_collective": r["in_collective"],
                "resumed_at": r["resumed_at"],
                "frame": r["stack__frame"] or "",
                "stack": r["stack__digest"],
            }
        rows.append(
            {
                "rank": r["rank"],
                "node": r["node__hostname"],
                "local_rank": r["local_rank"],
                "pid": r["pid"],
                "started_at": r["started_at"],
                "verdict": verdict.verdicts.get(r["rank"], "running"),
                "report": report,
            }
        )
    return {
        "job": job.pk,
        "attempt": ranks.attempt,
        "world_size": ranks.world_size,
        "registered": verdict.registered,
        "stall_s": verdict.stall_s,
        "verdict": {
            "minority": verdict.minority,
            "culprits": list(verdict.culprits),
            "culprit_nodes": list(verdict.culprit_nodes),
            "frame": verdict.frame,
            "collective": verdict.collective,
            "step": verdict.step,
            "counts": dict(verdict.counts),
            "stalled": verdict.stalled,
            "due": verdict.due,
            "stalled_since": verdict.stalled_since,
            "first_report_at": verdict.first_report_at,
            "sentence": verdict.sentence,
        },
        "stacks": ranks.stacks,
        "ranks": rows,
    }


class JobRanksView(APIView):
    """`POST jobs/{id}/ranks/` registers ranks (agents and operators); `GET` reads one
    attempt's ranks, their newest stall reports and the verdict on them (readers;
    docs/checks.md, `job_hang`)."""

    roles = {"GET": READERS, "POST": JOB_WRITERS}
    agent_scoped = True
    parser_classes = [FastJSONParser]

    @extend_schema(
        description="The ranks of the job's current attempt (or of `?attempt=`), each with "
        "its newest stall report and its verdict (`silent`, `outside`, `behind`, `waiting`, "
        "`running`), the verdict on them all (computed as read: nothing is written), and "
        "the stacks they are in, listed once each by digest. An attempt the job does not "
        "have is a 404.",
        parameters=[OpenApiParameter("attempt", int, description="default: the current one")],
        responses=JobRanksSerializer,
    )
    def get(self, request: Request, pk: int) -> Response:
        attempt = _attempt_asked(request)
        job = get_object_or_404(Job.objects.select_related("cluster"), pk=pk)
        ranks = job_ranks(job, attempt)
        if attempt is not None and not ranks.rows:
            return Response(
                {"detail": f"job {job.pk} has no attempt {attempt}"},
                status=status.HTTP_404_NOT_FOUND,
            )
        verdict = job_verdict(job, timezone.now(), ranks=ranks)
        return Response(ranks_answer(job, ranks, verdict))

    @extend_schema(
        description="Registers ranks, all or nothing: a rank not in the current attempt "
        "joins it, a re-sent registration (same `started_at` and `pid`) changes nothing, a "
        "rank that started again later begins the next attempt (a restarted job registers "
        "afresh), an older registration is ignored. A node not yet among the job's joins "
        "them. An agent token only for a job on its nodes; a node's token registers ranks "
        "only on its nodes, never one the current attempt has elsewhere, and begins a new "
        "attempt only from the node that holds rank 0 (docs/operations.md, Agent tokens and "
        "scopes). `world_size` is at most the job's `gpu_count`.",
        request=RankBatchSerializer,
        responses={202: RankRegisteredSerializer},
    )
    def post(self, request: Request, pk: int) -> Response:
        job = job_for_write(request.user, pk, Job.objects.select_related("cluster"))
        now = timezone.now()
        items = parse_rank_batch(request.data, now=now)
        require_nodes(request.user, {it.node for it in items})
        accepted, attempt = ranks_register(
            job=job,
            items=items,
            now=now,
            user=request.user,
            new_attempts=speaks_for_whole_job(request.user, job),
        )
        return Response({"accepted": accepted, "attempt": attempt}, status=status.HTTP_202_ACCEPTED)


class StallIngestView(APIView):
    """`POST ingest/stalls/`: ranks' stall reports (docs/checks.md, `job_hang`), all or
    nothing."""

    roles = {"POST": AGENTS}
    agent_scoped = True
    parser_classes = [FastJSONParser]
    # A burst: every rank of a hung job within a minute (docs/api.md, Conventions).
    remember_tokens = True

    @extend_schema(
        description="One stall report as the body, or `{reports: [...]}` (1 to 10,000). A "
        "report not newer than its rank's newest is a duplicate: accepted and ignored. A "
        "rank not registered in the job's current attempt is registered by its first "
        "report (`world_size` from it, else the largest known). An unknown job or node is "
        "a 400 naming it (`reports[i].job`; a single report's `job`); an agent token only "
        "for jobs on its nodes, and a node's token only for ranks the current attempt has on "
        "its nodes (or none yet) (docs/operations.md, Measured load).",
        request=StallBatchSerializer,
        responses={202: AcceptedSerializer},
    )
    def post(self, request: Request) -> Response:
        now = timezone.now()
        reports = parse_stall_batch(request.data, now=now)
        batch = isinstance(request.data, dict) and "reports" in request.data
        accepted = stalls_store(reports=reports, user=request.user, now=now, batch=batch)
        return Response({"accepted": accepted}, status=status.HTTP_202_ACCEPTED)
