"""What the effective-rate and availability maths need for one cluster and window, loaded
in a fixed number of set-based queries (whatever the number of jobs, nodes or weeks)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from django.db.models import Max, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce

from apps.common.dbfuncs import Epoch, from_epoch
from apps.fleet.models import Cluster, Node, NodeStateChange
from apps.incidents.choices import category_label
from apps.incidents.costs import costs_at
from apps.incidents.models import Incident
from apps.jobs.mfu import flops_per_token, mfu_factor, mfu_of
from apps.jobs.models import (
    Checkpoint,
    Job,
    JobMetricHour,
    JobPhase,
    known_blocking,
    known_blocking_sql,
)
from apps.jobs.peaks import job_peaks
from apps.reports.availability import NodeHistory
from apps.reports.effective import Interruption, JobRun


def _jobs_in(
    cluster: Cluster, start: dt.datetime, end: dt.datetime, only: int | None
) -> list[Mapping[str, Any]]:
    jobs = Job.objects.filter(cluster=cluster, started_at__lt=end).filter(
        Q(ended_at__isnull=True) | Q(ended_at__gt=start)
    )
    if only is not None:
        jobs = jobs.filter(pk=only)
    return list(
        jobs.values(
            "id", "name", "gpu_count", "started_at", "ended_at", "n_params", "flops_per_token"
        )
    )


def _interruptions(job_ids: list[int], start: dt.datetime, end: dt.datetime) -> dict:
    """Each job's interruptions that can cost time in the window: failed before its end and
    not recovered before its start."""
    rows = (
        Incident.objects.filter(job_id__in=job_ids, interrupts_job=True)
        .annotate(failed=Coalesce("occurred_at", "detected_at"))
        .filter(failed__lt=end)
        .filter(Q(recovered_at__isnull=True) | Q(recovered_at__gt=start) | Q(failed__gt=start))
        .values_list(
            "job_id",
            "pk",
            "failed",
            "recovered_at",
            "planned",
            "category",
            "detected_at",
            "localized_at",
            "mitigated_at",
        )
    )
    out: dict[int, list[Interruption]] = defaultdict(list)
    for job_id, pk, *times in rows:
        out[job_id].append(Interruption(pk, *times))
    return out


def _checkpoints(job_ids: list[int], start: dt.datetime, end: dt.datetime) -> dict:
    """Each job's checkpoints in [start − longest blocking time, end), plus its latest one
    before that, in time order: enough to find every failure's restart point exactly (a
    checkpoint older than the look-back has finished writing before the window starts)."""
    longest = Checkpoint.objects.filter(job_id__in=job_ids).aggregate(m=Max(known_blocking_sql()))[
        "m"
    ]
    since = start - dt.timedelta(seconds=max(longest or 0.0, 0.0))
    out: dict[int, list[tuple[dt.datetime, float]]] = defaultdict(list)
    for job_id, saved_at, blocking in (
        Checkpoint.objects.filter(job_id__in=job_ids, saved_at__gte=since, saved_at__lt=end)
        .order_by("job_id", "saved_at")
        .values_list("job_id", Epoch("saved_at"), "blocking_s")
    ):
        out[job_id].append((from_epoch(saved_at), known_blocking(blocking)))
    before = Job.objects.filter(pk__in=job_ids).annotate(
        last=Subquery(
            Checkpoint.objects.filter(job=OuterRef("pk"), saved_at__lt=since)
            .order_by("-saved_at")
            .values("saved_at")[:1]
        )
    )
    for job_id, last in before.exclude(last=None).values_list("pk", "last"):
        out[job_id].insert(0, (last, 0.0))  # finished before `since`: its blocking is past
    return out


def mean_tokens_per_s(job_ids: list[int], start: dt.datetime, end: dt.datetime) -> dict[int, float]:
    """Each job's mean tokens/s over [start, end) weighted by step time (hours wholly in
    the window; a week starts on the hour)."""
    rows = (
        JobMetricHour.objects.filter(job_id__in=job_ids, hour__gte=start, hour__lt=end)
        .values("job_id")
        .annotate(w=Sum("step_s_sum"), x=Sum("tps_step_sum"))
        .values_list("job_id", "w", "x")
    )
    return {job_id: x / w for job_id, w, x in rows if w}


def phase_spans(
    *, cluster: Cluster, start: dt.datetime, end: dt.datetime
) -> list[tuple[str, dt.datetime, dt.datetime, int]]:
    """(name, start, end, the job's GPUs) of every phase of the cluster's jobs that overlaps
    [start, end), unclipped (docs/formulas.md, Time in the run not spent training). One
    query."""
    return list(
        JobPhase.objects.filter(job__cluster=cluster, start__lt=end, end__gt=start)
        .order_by()
        .values_list("name", "start", "end", "job__gpu_count")
    )


def job_runs(
    *,
    cluster: Cluster,
    start: dt.datetime,
    end: dt.datetime,
    with_mfu: bool = True,
    only: int | None = None,
    peaks: dict[int, float | None] | None = None,
) -> list[JobRun]:
    """Every job (or job `only`) that ran in [start, end) with its interruptions,
    checkpoints and (when asked) its step-time-weighted mean MFU over the window. `peaks`,
    when given, holds jobs' peaks already read (`job_peaks`, which counts every GPU of a
    job's nodes) and receives those read here: a page showing two weeks reads each once."""
    jobs = _jobs_in(cluster, start, end, only)
    ids = [j["id"] for j in jobs]
    interruptions = _interruptions(ids, start, end)
    checkpoints = _checkpoints(ids, start, end)
    tps = mean_tokens_per_s(ids, start, end) if with_mfu else {}
    if peaks is None:
        peaks = {}
    if with_mfu and (missing := [i for i in ids if i not in peaks]):
        peaks.update(job_peaks(cluster, missing))
    out = []
    for j in jobs:
        factor = mfu_factor(
            fpt=flops_per_token(flops_per_token=j["flops_per_token"], n_params=j["n_params"]),
            gpu_count=j["gpu_count"],
            peak_tflops_per_gpu=peaks.get(j["id"]) or 0.0,  # 0: peak unknown, no MFU
        )
        mean = tps.get(j["id"])
        out.append(
            JobRun(
                id=j["id"],
                name=j["name"],
                gpu_count=j["gpu_count"],
                started_at=j["started_at"],
                ended_at=j["ended_at"],
                interruptions=interruptions.get(j["id"], ()),
                checkpoints=checkpoints.get(j["id"], ()),
                mean_mfu=mfu_of(mean, factor or None),
            )
        )
    return out


def node_histories(
    *, cluster: Cluster, start: dt.datetime, end: dt.datetime, where: Q | None = None
) -> list[NodeHistory]:
    """Every node of the cluster (or those of them `where` selects) with its state at
    `start` and its changes in (start, end)."""
    chosen = Node.objects.filter(cluster=cluster)
    if where is not None:
        chosen = chosen.filter(where)
    nodes = (
        chosen.annotate(
            at_start=Subquery(
                NodeStateChange.objects.filter(node=OuterRef("pk"), at__lte=start)
                .order_by("-at", "-id")
                .values("state")[:1]
            )
        )
        .order_by("hostname")
        .values_list("pk", "hostname", "gpu_count", "in_service_at", "at_start")
    )
    changes: dict[int, list[tuple[dt.datetime, str]]] = defaultdict(list)
    for node_id, at, state in (
        NodeStateChange.objects.filter(node__cluster=cluster, at__gt=start, at__lt=end)
        .order_by("at", "id")
        .values_list("node_id", "at", "state")
    ):
        changes[node_id].append((at, state))
    return [
        NodeHistory(hostname, gpus, in_service, at_start, changes.get(pk, ()))
        for pk, hostname, gpus, in_service, at_start in nodes
    ]


def incident_facts(ids: list[int], *, now: dt.datetime) -> dict[int, dict]:
    """Title, category, severity, status and planned flag of the incidents behind lost
    hours, and what each cost at `now` (docs/incidents.md, What it cost: the figure every page
    shows)."""
    incidents = Incident.objects.filter(pk__in=ids).select_related("job")
    return {
        i.pk: {
            "id": i.pk,
            "title": i.title,
            "category": i.category,
            "category_label": category_label(i.category),
            "severity": i.severity,
            "status": i.status,
            "planned": i.planned,
            "recovered": i.recovered_at is not None,
            "downtime_s": i.downtime_s,
            "rework_s": i.rework_s,
            "lost_gpu_hours": i.lost_gpu_hours,
        }
        for i in costs_at(incidents, now=now)
    }
