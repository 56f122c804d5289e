"""Reads for the overview: KPIs, node grid, running jobs, latest incidents — a fixed number
of queries whatever the cluster's size."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from itertools import groupby

from django.db.models import Count, Exists, OuterRef, Q

from apps.fleet.choices import AVAILABLE_STATES, NodeState
from apps.fleet.models import Cluster, Node
from apps.fleet.selectors import StateCount, state_counts
from apps.incidents.choices import ACTIVE_STATUSES, Severity
from apps.incidents.models import Incident
from apps.jobs.models import Job
from apps.jobs.selectors import running_jobs
from apps.reports.reliability import IncidentTimes, reliability


@dataclass(frozen=True)
class Tile:
    """One node in the grid."""

    hostname: str
    state: str
    reason: str
    busy: bool


@dataclass
class RunningJob:
    """A running job's row on the overview."""

    job: Job
    mfu: float | None
    since_progress_s: float | None
    since_checkpoint_s: float | None


@dataclass
class Overview:
    """Everything the overview page shows for one cluster."""

    cluster: Cluster
    now: dt.datetime
    states: list[StateCount]
    gpus_total: int
    gpus_available: int
    gpus_in_use: int
    gpus_down: int
    mfu_now: float | None
    jobs: list[RunningJob]
    racks: list[tuple[str, list[Tile]]]
    open_by_severity: list[tuple[Severity, int]]
    incidents: list[Incident] = field(default_factory=list)


def overview(*, cluster: Cluster, now: dt.datetime) -> Overview:
    """Assemble the overview in a handful of set-based queries."""
    states = state_counts(cluster=cluster)
    jobs = running_jobs(cluster_id=cluster.pk)
    busy_nodes = set(
        Job.nodes.through.objects.filter(job__in=[j.pk for j in jobs]).values_list(
            "node_id", flat=True
        )
    )
    rows = (
        Node.objects.filter(cluster=cluster)
        .order_by("rack", "hostname")
        .values_list("pk", "hostname", "rack", "state", "state_reason", "gpu_count")
    )
    racks: list[tuple[str, list[Tile]]] = []
    gpus_in_use = 0
    for rack, members in groupby(rows, key=lambda r: r[2]):
        tiles = []
        for pk, hostname, _, state, reason, gpu_count in members:
            busy = pk in busy_nodes
            if busy and state in AVAILABLE_STATES:
                gpus_in_use += gpu_count
            tiles.append(Tile(hostname, state, reason, busy))
        racks.append((rack or "—", tiles))
    running = [
        RunningJob(
            job=job,
            mfu=(job.last_tokens_per_s * f)
            if (f := job.mfu_factor()) and job.last_tokens_per_s
            else None,
            since_progress_s=(now - job.last_metric_at).total_seconds()
            if job.last_metric_at
            else None,
            since_checkpoint_s=(now - job.last_checkpoint_at).total_seconds()
            if job.last_checkpoint_at
            else None,
        )
        for job in jobs
    ]
    weighted = [(r.mfu, r.job.gpu_count) for r in running if r.mfu is not None]
    mfu_now = sum(m * g for m, g in weighted) / sum(g for _, g in weighted) if weighted else None
    open_counts = dict(
        Incident.objects.filter(cluster=cluster, status__in=ACTIVE_STATUSES)
        .values_list("severity")
        .annotate(n=Count("id"))
    )
    by_state = {s.state: s for s in states}
    return Overview(
        cluster=cluster,
        now=now,
        states=states,
        gpus_total=sum(s.gpus for s in states),
        gpus_available=sum(by_state[s].gpus for s in AVAILABLE_STATES),
        gpus_in_use=gpus_in_use,
        gpus_down=by_state[NodeState.DOWN].gpus,
        mfu_now=mfu_now,
        jobs=running,
        racks=racks,
        open_by_severity=[(sev, open_counts.get(sev.value, 0)) for sev in Severity],
        incidents=list(
            Incident.objects.filter(cluster=cluster)
            .select_related("job")
            .prefetch_related("nodes")
            .order_by("-detected_at")[:10]
        ),
    )


def reliability_report(
    *, cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime, job_nodes: int
) -> dict[str, object]:
    """§4.1 for one cluster: its incidents and nodes in two queries, the maths in
    `apps.reports.reliability`."""
    named = Incident.nodes.through.objects.filter(incident=OuterRef("pk"))
    rows = (
        Incident.objects.filter(cluster=cluster, interrupts_job=True)
        .filter(
            Q(occurred_at__gte=start, occurred_at__lt=end)
            | Q(occurred_at__isnull=True, detected_at__gte=start, detected_at__lt=end)
        )
        .annotate(names_nodes=Exists(named))
        .values_list(
            "occurred_at",
            "detected_at",
            "localized_at",
            "recovered_at",
            "interrupts_job",
            "planned",
            "category",
            "names_nodes",
        )
    )
    report = reliability(
        start=start,
        end=end,
        now=now,
        incidents=[IncidentTimes(*row) for row in rows],
        in_service=list(
            Node.objects.filter(cluster=cluster).values_list("in_service_at", flat=True)
        ),
        job_nodes=job_nodes,
    )
    report["cluster"] = cluster.name
    return report
