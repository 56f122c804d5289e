"""Reads for the overview: KPIs, node grid, running jobs, latest incidents — a fixed number
of queries whatever the cluster's size."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from django.db.models import Count, Exists, FloatField, Min, OuterRef, Q, Sum, Value
from django.db.models.functions import Coalesce

from apps.common.dbfuncs import Epoch
from apps.common.weeks import WEEK, week_label, week_start
from apps.fleet.models import Cluster, Node
from apps.fleet.selectors import GpuAccount, StateCount, gpu_account, state_counts
from apps.incidents.choices import ACTIVE_STATUSES, Severity
from apps.incidents.costs import cost_order
from apps.incidents.models import Incident
from apps.jobs.choices import JobCondition
from apps.jobs.models import Job
from apps.jobs.peaks import attach_peaks
from apps.jobs.readers import JobIncidents, Line, MfuLines, job_incidents
from apps.jobs.selectors import checkpoint_cost_mean, running_jobs, running_node_ids
from apps.reports.models import ClusterTargets
from apps.reports.planning import what_if
from apps.reports.recovery_parts import RecoveryTimes, weekly_recovery
from apps.reports.reliability import IncidentTimes, InService, Window, clipped, reliability
from apps.reports.targets import (
    MFU_REFERENCE,
    MFU_REFERENCE_LABEL,
    Targets,
    target_words,
)
from apps.reports.wall import WallGrid, wall_grid


@dataclass(frozen=True)
class Tile:
    """One node in the grid."""

    hostname: str
    state: str
    reason: str
    busy: bool


@dataclass
class RunningJob:
    """A running job's row on the overview: MFU now is 0 while it is hung or interrupted."""

    job: Job
    health: JobIncidents
    mfu: float | None
    since_progress_s: float | None
    since_checkpoint_s: float | None


@dataclass
class Overview:
    """Everything the overview page shows for one cluster."""

    cluster: Cluster
    now: dt.datetime
    states: list[StateCount]
    gpus: GpuAccount
    mfu_now: float | None
    jobs: list[RunningJob]
    racks: list[tuple[str, list[Tile]]]
    open_by_severity: list[tuple[Severity, int]]
    incidents: list[Incident] = field(default_factory=list)

    @property
    def wall(self) -> WallGrid:
        """The node grid's shape on a wall screen (racks a row, its share of the height)."""
        return wall_grid([len(tiles) for _, tiles in self.racks])

    @property
    def not_ok(self) -> list[tuple[JobCondition, int]]:
        """Running jobs per condition other than ok, worst first: `[(hung, 1), …]`."""
        counts = Counter(r.health.condition for r in self.jobs)
        return [
            (c, counts[c.value])
            for c in reversed(JobCondition)
            if counts[c.value] and c != JobCondition.OK
        ]


def gpu_weighted_mfu(rows: list[tuple[float | None, int]]) -> float | None:
    """Σ gpus × MFU / Σ gpus over the jobs with an MFU now (a stopped job's is 0)."""
    weighted = [(m, g) for m, g in rows if m is not None]
    gpus = sum(g for _, g in weighted)
    return sum(m * g for m, g in weighted) / gpus if gpus else None


def overview(*, cluster: Cluster, now: dt.datetime) -> Overview:
    """Assemble the overview in a handful of set-based queries. The GPU figures are the
    cluster API's `gpus` (docs/formulas.md, GPUs now), counted by the same function over the same
    nodes."""
    states = state_counts(cluster=cluster)
    jobs = running_jobs(cluster_id=cluster.pk)
    busy_nodes = running_node_ids(cluster.pk)
    rows = (
        Node.objects.filter(cluster=cluster)
        .order_by("rack", "hostname")
        .values_list("pk", "hostname", "rack", "state", "state_reason", "gpu_count")
    )
    racks: list[tuple[str, list[Tile]]] = []
    accounted = []
    for rack, members in groupby(rows, key=lambda r: r[2]):
        tiles = []
        for pk, hostname, _, state, reason, gpu_count in members:
            busy = pk in busy_nodes
            accounted.append((gpu_count, state, busy))
            tiles.append(Tile(hostname, state, reason, busy))
        racks.append((rack or "—", tiles))
    health = job_incidents([j.pk for j in jobs])
    attach_peaks(jobs)
    running = [
        RunningJob(
            job=job,
            health=health[job.pk],
            mfu=job.mfu_now(stopped=health[job.pk].stopped),
            since_progress_s=(now - job.progress_at).total_seconds() if job.progress_at else None,
            since_checkpoint_s=(now - job.last_checkpoint_at).total_seconds()
            if job.last_checkpoint_at
            else None,
        )
        for job in jobs
    ]
    open_counts = dict(
        Incident.objects.filter(cluster=cluster, status__in=ACTIVE_STATUSES)
        .values_list("severity")
        .annotate(n=Count("id"))
    )
    return Overview(
        cluster=cluster,
        now=now,
        states=states,
        gpus=gpu_account(accounted),
        mfu_now=gpu_weighted_mfu([(r.mfu, r.job.gpu_count) for r in running]),
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


def targets_for(*, cluster: Cluster) -> Targets:
    """The cluster's floors: its own, set in the admin, else the defaults (no query when
    the cluster was read with `select_related("targets")`)."""
    try:
        return cluster.targets.as_targets()
    except ClusterTargets.DoesNotExist:
        return Targets()


def mfu_lines(cluster: Cluster) -> MfuLines:
    """The cluster's MFU target (its floor) and the best public figure (a reference), as
    the job page's chart draws them (lent to the jobs app)."""
    floor = targets_for(cluster=cluster).mean_mfu
    return MfuLines(
        target=Line(floor, target_words("mean_mfu", floor)),  # in the page's language
        reference=Line(MFU_REFERENCE, MFU_REFERENCE_LABEL),
    )


def reliability_report(
    *, cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime, job_nodes: int
) -> dict[str, object]:
    """docs/formulas.md, Reliability, for one cluster: its incidents and its nodes' time in
    service in two queries, the maths in `apps.reports.reliability`."""
    report = reliability(
        start=start,
        end=end,
        now=now,
        incidents=_incident_times(cluster, start, end),
        in_service=nodes_in_service(cluster, [(start, end)], now),
        job_nodes=job_nodes,
    )
    report["cluster"] = cluster.name
    return report


DEFAULT_CHECKPOINT_COST_S = 60.0  # what-if without any checkpoint measured


def whatif_projection(*, cluster: Cluster, now: dt.datetime, gpus: int) -> dict[str, Any]:
    """The weekly page's what-if: a job of `gpus` GPUs projected from the last 30 days' node
    MTBF, MTTR and mean checkpoint cost (`p` only when a node failed in those days)."""
    start = now - dt.timedelta(days=30)
    rel = reliability_report(cluster=cluster, start=start, end=now, now=now, job_nodes=1)
    cost = checkpoint_cost_mean(cluster_id=cluster.pk, since=start) or DEFAULT_CHECKPOINT_COST_S
    out: dict[str, Any] = {"gpus": gpus, "rel": rel, "cost_s": cost}
    node_mtbf, mttr = rel["node_mtbf_hours"], rel["mttr_minutes"]
    if isinstance(node_mtbf, float) and node_mtbf:
        out["p"] = what_if(
            gpus=gpus,
            gpus_per_node=cluster.gpus_per_node,
            node_mtbf_hours=node_mtbf,
            mttr_minutes=mttr if isinstance(mttr, float) else 0.0,
            checkpoint_cost_s=cost,
        )
    return out


def node_mtbf_hours(*, cluster: Cluster, start: dt.datetime, now: dt.datetime) -> float | None:
    """The node MTBF of docs/formulas.md, Reliability, over [start, now) in two small queries (no
    incident rows loaded): node-hours in service / unexpected interruptions naming at least one
    node."""
    failures = (
        Incident.objects.filter(cluster=cluster, interrupts_job=True, planned=False)
        .annotate(failed=Coalesce("occurred_at", "detected_at"))
        .filter(failed__gte=start, failed__lt=now)
        .filter(Exists(Incident.nodes.through.objects.filter(incident=OuterRef("pk"))))
        .count()
    )
    if not failures:
        return None
    seconds = nodes_in_service(cluster, [(start, now)], now).node_seconds[(start, now)]
    return seconds / 3600 / failures


def nodes_in_service(cluster: Cluster, windows: list[Window], now: dt.datetime) -> InService:
    """The cluster's nodes' time in service in each window (docs/formulas.md, Reliability),
    summed in one query whatever the number of nodes: a window [s, e) (e clipped to now)
    holds e − s of each node in service by s, e − in_service_at of each that came in
    within it, nothing of the others."""
    windows = clipped(windows, now)
    sums: dict[str, Any] = {"earliest": Min("in_service_at")}
    for k, (start, end) in enumerate(windows):
        if end <= start:
            continue
        sums[f"before{k}"] = Count("id", filter=Q(in_service_at__lte=start))
        sums[f"within{k}"] = Sum(
            Value(end.timestamp(), output_field=FloatField()) - Epoch("in_service_at"),
            filter=Q(in_service_at__gt=start, in_service_at__lt=end),
        )
    row = Node.objects.filter(cluster=cluster).aggregate(**sums)
    seconds = {}
    for k, (start, end) in enumerate(windows):
        if end <= start:
            seconds[(start, end)] = 0.0
            continue
        before = row[f"before{k}"] * (end - start).total_seconds()
        seconds[(start, end)] = before + (row[f"within{k}"] or 0.0)
    return InService(earliest=row["earliest"], node_seconds=seconds)


def _incident_times(cluster: Cluster, start: dt.datetime, end: dt.datetime) -> list[IncidentTimes]:
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
    return [IncidentTimes(*row) for row in rows]


def weekly_reliability(
    *, cluster: Cluster, weeks: int, now: dt.datetime, last: dt.datetime | None = None
) -> list[dict[str, object]]:
    """docs/formulas.md, Reliability, for each of the `weeks` ISO weeks up to the one starting
    `last` (default: this week), in two queries."""
    first = (last or week_start(now)) - (weeks - 1) * WEEK
    incidents = _incident_times(cluster, first, now)
    starts = [first + k * WEEK for k in range(weeks)]
    in_service = nodes_in_service(cluster, [(start, start + WEEK) for start in starts], now)
    out = []
    for start in starts:
        week = reliability(
            start=start,
            end=start + WEEK,
            now=now,
            incidents=incidents,
            in_service=in_service,
        )
        week["week"] = week_label(start)
        week["complete"] = start + WEEK <= now
        out.append(week)
    return out


def recovery_by_week(
    *, cluster: Cluster, start: dt.datetime, now: dt.datetime
) -> list[dict[str, Any]]:
    """docs/formulas.md, Recovery time and its parts, for every ISO week from the one holding
    `start` to this one: the mean minutes of each part over the week's unexpected
    interruptions that recovered (f(i) in the week), in one query."""
    first = week_start(start)
    weeks = (week_start(now) - first) // WEEK + 1
    rows = (
        Incident.objects.filter(
            cluster=cluster, interrupts_job=True, planned=False, recovered_at__isnull=False
        )
        .annotate(failed=Coalesce("occurred_at", "detected_at"))
        .filter(failed__gte=first, failed__lt=now)
        .values_list("failed", "detected_at", "localized_at", "mitigated_at", "recovered_at")
    )
    incidents = [
        RecoveryTimes(failed, detected, localized, mitigated, recovered)
        for failed, detected, localized, mitigated, recovered in rows
        if recovered is not None  # filtered above; says so to the type checker
    ]
    return weekly_recovery(first=first, weeks=weeks, now=now, incidents=incidents)


def category_costs(
    *, cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime
) -> list[dict[str, object]]:
    """Unexpected interruptions per category: count and lost GPU-hours (each incident's
    cost at `now`: an open one's up to it), most frequent first."""
    rows = (
        Incident.objects.filter(
            cluster=cluster,
            interrupts_job=True,
            planned=False,
            detected_at__gte=start,
            detected_at__lt=end,
        )
        .values("category")
        .annotate(count=Count("id"), lost=Sum(cost_order(now)))
    )
    return sorted(
        (
            {"category": r["category"], "count": r["count"], "lost_gpu_hours": r["lost"] or 0.0}
            for r in rows
        ),
        key=lambda r: -r["count"],
    )


LEMON_FAILURES = 3  # a lemon fails repeatedly: one or two failures is not one


def lemon_nodes(
    *, cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime, limit: int = 20
) -> list[dict[str, object]]:
    """Repeat offenders (docs/formulas.md, Reliability: MTBF at three levels): nodes named by
    at least LEMON_FAILURES unexpected interruptions detected in the window, ranked by that
    count, then by failures per node-day in service."""
    end = min(end, now)
    # One filter() call: the count is of the incidents these conditions select (the join the
    # filter made), so a node's failures are its interrupting, unplanned ones in the window.
    rows = (
        Node.objects.filter(
            incidents__cluster=cluster,
            incidents__interrupts_job=True,
            incidents__planned=False,
            incidents__detected_at__gte=start,
            incidents__detected_at__lt=end,
        )
        .annotate(failures=Count("incidents"))
        .filter(failures__gte=LEMON_FAILURES)
        .values_list("hostname", "rack", "state", "in_service_at", "failures")
    )
    out: list[dict[str, Any]] = []
    for hostname, rack, state, in_service, failures in rows:
        days = max((end - max(start, in_service)).total_seconds(), 3600.0) / 86400
        out.append(
            {
                "hostname": hostname,
                "rack": rack,
                "state": state,
                "failures": failures,
                "days": days,
                "per_node_day": failures / days,
            }
        )
    return sorted(out, key=lambda r: (-r["failures"], -r["per_node_day"], r["hostname"]))[:limit]
