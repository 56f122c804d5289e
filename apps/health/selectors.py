"""Reads for the health pages: per-kind status, the node grid, evidence, suspects."""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, Max, Min, Q, QuerySet

from apps.common.words import Words
from apps.fleet.choices import NodeState
from apps.fleet.models import Cluster, Node
from apps.health.checks import PLUGINS, CheckSpec
from apps.health.choices import (
    NOT_PASSING,
    SEVERITY_ORDER,
    SOURCE_TARGET,
    ResultStatus,
    RunStatus,
)
from apps.health.models import CheckResult, CheckRun, CheckSchedule
from apps.incidents.choices import ACTIVE_STATUSES
from apps.incidents.models import Incident
from apps.telemetry.models import TelemetryEvent


@dataclass
class KindStatus:
    """A check's last run and schedule, and why the cluster's data cannot be judged by it
    (`not_monitored`, None when it can)."""

    check: CheckSpec
    not_monitored: Words | None
    last: CheckRun | None
    failing: int
    warning: int
    interval_s: int | None
    next_due_at: dt.datetime | None
    pending: CheckRun | None = None  # a run queued or running since `last`: its results come


def kind_statuses(*, cluster: Cluster) -> list[KindStatus]:
    """Each check's newest completed run (done or error, one a worker started: a queued run
    is no "Last run", docs/operations.md, Watching the watcher), failing/warning counts and
    schedule (4 queries), in the order the plug-ins are registered; a check not run on the
    schedule has no interval."""
    newest: dict[str, int] = {}
    waiting: dict[str, int] = {}
    for kind, status, last in (
        CheckRun.objects.filter(
            Q(status__in=[RunStatus.DONE, RunStatus.ERROR], started_at__isnull=False)
            | Q(status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
        )
        .filter(cluster=cluster)
        .values("kind", "status")
        .annotate(last=Max("id"))
        .values_list("kind", "status", "last")
    ):
        into = waiting if status in (RunStatus.QUEUED, RunStatus.RUNNING) else newest
        into[kind] = max(into.get(kind, 0), last)
    # A run queued or running after the last completed one is shown beside it ("Run now"
    # answered: its results come), so the table changes when the worker finishes it.
    waiting = {k: pk for k, pk in waiting.items() if pk > newest.get(k, 0)}
    runs = CheckRun.objects.in_bulk([*newest.values(), *waiting.values()])
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for kind, status in (
        CheckResult.objects.filter(cluster=cluster)
        .filter(status__in=NOT_PASSING)
        .values_list("kind", "status")
    ):
        counts[(kind, status)] += 1
    schedules = {s.kind: s for s in CheckSchedule.objects.filter(cluster=cluster)}
    return [
        KindStatus(
            check=spec,
            not_monitored=spec.not_monitored(cluster),
            last=runs.get(newest.get(k)),
            failing=counts[(k, "fail")],
            warning=counts[(k, "warn")],
            interval_s=(schedules[k].interval_s if k in schedules else spec.interval_s)
            if spec.scheduled
            else None,
            next_due_at=schedules[k].next_due_at if k in schedules and spec.scheduled else None,
            pending=runs.get(waiting[k]) if k in waiting else None,
        )
        for spec in PLUGINS
        for k in (spec.kind,)
    ]


@dataclass
class Summary:
    """The overview's health line."""

    last_sweep_at: dt.datetime | None
    failing: int
    warning: int
    errors: int


def summary(*, cluster: Cluster) -> Summary:
    """When checks last ran, how many targets fail or warn, how many recent runs errored."""
    last = CheckRun.objects.filter(cluster=cluster, status="done").aggregate(at=Max("started_at"))[
        "at"
    ]
    counts = Counter(
        CheckResult.objects.filter(cluster=cluster)
        .filter(status__in=NOT_PASSING)
        .values_list("status", flat=True)
    )
    errors = CheckRun.objects.filter(cluster=cluster, status="error").order_by("-id")[:20].count()
    return Summary(last, counts["fail"], counts["warn"], errors)


@dataclass(frozen=True)
class HealthTile:
    """A node in the health grid: its state, worst current result and why."""

    hostname: str
    state: str
    worst: str
    why: str


def health_grid(*, cluster: Cluster) -> list[tuple[str, list[HealthTile]]]:
    """Every node, rack by rack, with its worst current result (2 queries)."""
    worst: dict[int, tuple[str, str]] = {}
    for node_id, status, kind, message in (
        CheckResult.objects.filter(cluster=cluster, node__isnull=False)
        .filter(status__in=NOT_PASSING)
        .values_list("node_id", "status", "kind", "message")
    ):
        if node_id not in worst or SEVERITY_ORDER[status] > SEVERITY_ORDER[worst[node_id][0]]:
            worst[node_id] = (status, f"{kind}: {message}")
    racks: dict[str, list[HealthTile]] = defaultdict(list)
    for pk, hostname, rack, state in (
        Node.objects.filter(cluster=cluster)
        .order_by("rack", "hostname")
        .values_list("pk", "hostname", "rack", "state")
    ):
        status, why = worst.get(pk, ("pass", ""))
        racks[rack or "—"].append(HealthTile(hostname, state, status, why))
    return list(racks.items())


def kinds_judged(*, cluster_ids: Iterable[int] | None = None) -> dict[tuple[int, str], dt.datetime]:
    """When each check kind last judged each cluster: the start of its newest `done` run, the
    time its verdicts hold as of (a pass is written only when it changes, so a result's `at`
    is when that verdict began, not when it was last judged: docs/checks.md, How a check run
    works). A run that ended in error judged nothing. One query."""
    runs = CheckRun.objects.filter(status=RunStatus.DONE, started_at__isnull=False)
    if cluster_ids is not None:
        runs = runs.filter(cluster_id__in=list(cluster_ids))
    return {
        (cluster_id, kind): at
        for cluster_id, kind, at in runs.values("cluster_id", "kind")
        .annotate(at=Max("started_at"))
        .values_list("cluster_id", "kind", "at")
    }


def results(*, cluster: Cluster) -> QuerySet[CheckResult]:
    """Current results, worst and newest first."""
    return (
        CheckResult.objects.filter(cluster=cluster)
        .select_related("node", "job")
        .order_by("status", "-at", "kind", "target")
    )


def node_blamed(*, node: Node) -> list[Incident]:
    """The open incidents whose verdict blames `node`: a hang that names it as its culprit's
    node (or, with no culprit, first on the other evidence). Its own checks may all pass
    meanwhile, so its Checks card says which incident holds it (docs/checks.md, Ranks)."""
    return list(
        Incident.objects.filter(
            nodes=node, status__in=ACTIVE_STATUSES, details__has_key="verdict"
        ).order_by("-detected_at", "-id")[:5]
    )


def node_evidence(*, node: Node) -> dict[str, object]:
    """A node's current results (problems first), recent GPU events, and the open incidents
    whose verdict blames it."""
    rows = list(CheckResult.objects.filter(node=node).order_by("kind", "target"))
    rows.sort(key=lambda r: -SEVERITY_ORDER[r.status])
    events = list(
        TelemetryEvent.objects.filter(node=node).exclude(kind="counter_reset").order_by("-at")[:20]
    )
    passing = Counter(r.kind for r in rows if r.status == "pass")
    return {
        "results": rows,
        "events": events,
        "passing": sorted(passing.items()),
        "problems": [r for r in rows if r.status != "pass"],
        "blamed": node_blamed(node=node),
    }


def node_admission(*, node: Node) -> dict[str, object]:
    """May a job start on `node` now (`kuae-agent prolog`, docs/agent.md)? `{ok, state,
    problems: [{kind, target, reason}]}`: not ok when the node is not `healthy` or any of
    its current results (the node's or one of its GPUs') is a fail. Two queries."""
    problems: list[dict[str, str]] = []
    if node.state != NodeState.HEALTHY:
        said = f"state {node.state}" + (f": {node.state_reason}" if node.state_reason else "")
        problems.append({"kind": "state", "target": f"node:{node.hostname}", "reason": said})
    fails = CheckResult.objects.filter(node=node, status=ResultStatus.FAIL).order_by(
        "kind", "target"
    )
    for kind, target, message in fails.values_list("kind", "target", "message"):
        reason = f"failed the {kind} check" + (f": {message}" if message else "")
        problems.append({"kind": kind, "target": target, "reason": reason})
    return {"ok": not problems, "state": node.state, "problems": problems}


def telemetry_source_down(*, cluster: Cluster) -> CheckResult | None:
    """The newest `error` result of the cluster's Prometheus (docs/checks.md, How a check run works)
    when its last answer to a check was none, else None (also for a cluster without one)."""
    if not cluster.prometheus_url:
        return None
    latest = (
        CheckResult.objects.filter(cluster=cluster, target=SOURCE_TARGET).order_by("-at").first()
    )
    return latest if latest is not None and latest.status == ResultStatus.ERROR else None


@dataclass(frozen=True)
class ChecksWaiting:
    """Check runs nobody has taken: how many, queued since when, on which queue."""

    runs: int
    since: dt.datetime
    queue: str


def checks_waiting(
    *, cluster: Cluster, now: dt.datetime, after_s: float = 120
) -> ChecksWaiting | None:
    """The cluster's queued runs when none of its runs has started for `after_s` while they
    waited: no worker takes its queue (none started with `-Q <queue>`, or all are down or
    busy). None while its checks are being taken (2 queries)."""
    cutoff = now - dt.timedelta(seconds=after_s)
    queued = CheckRun.objects.filter(cluster=cluster, status=RunStatus.QUEUED).aggregate(
        n=Count("id"), since=Min("queued_at")
    )
    if not queued["n"] or queued["since"] > cutoff:
        return None
    if CheckRun.objects.filter(cluster=cluster, started_at__gte=cutoff).exists():
        return None
    return ChecksWaiting(
        runs=queued["n"],
        since=queued["since"],
        queue=cluster.queue or settings.CELERY_TASK_DEFAULT_QUEUE,
    )
