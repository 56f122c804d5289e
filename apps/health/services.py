"""Every write of the health app: check runs, schedules, pre-flight. What a run's findings
change is `outcomes`; what each check loads and detects is its plug-in (`checks`)."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.common.dbconflicts import atomic_with_retry
from apps.common.retention import delete_in_batches
from apps.common.words import counted
from apps.fleet.models import Cluster
from apps.health import detectors as d
from apps.health.checks import (
    CHECKS,
    PREFLIGHT,
    SCHEDULED_KINDS,
    Context,
    check_for,
    skip_maintenance,
)
from apps.health.choices import SOURCE_TARGET, ResultStatus, RunStatus
from apps.health.detectors.findings import passed
from apps.health.limits import Limits, limits_from
from apps.health.models import CheckResult, CheckRun, CheckSchedule, Thresholds
from apps.health.outcomes import findings_apply
from apps.jobs.models import Job
from apps.telemetry.prometheus_source import SourceDown, prometheus_pull, pull_asks

log = logging.getLogger(__name__)


def limits_for(cluster: Cluster) -> Limits:
    """The cluster's thresholds: the defaults (docs/checks.md, Thresholds) with its own
    overrides."""
    row = Thresholds.objects.filter(cluster=cluster).values_list("values", flat=True).first()
    return limits_from(row or {})


# What each check that reads telemetry pulls from a cluster's Prometheus before it runs
# (its plug-in's `pulls`, KUAE's names; docs/integrations.md): a run whose source does not
# answer stores `error` results instead of judging stale values. Every pull of GPU fields
# adds the temperature, which carries the GPU's identity and marks it and its node as
# reporting. A check whose `pulls` ask the server nothing (`pcie`: node_exporter publishes
# no PCIe series) is not pulled.
PULLED_METRICS: dict[str, frozenset[str]] = {
    s.kind: s.pulls for s in CHECKS.values() if s.pulls and s.scheduled and pull_asks(s.pulls)
}


def detect(
    kind: str, cluster: Cluster, now: dt.datetime, limits: Limits
) -> tuple[list[d.Finding], Context]:
    """Load what `kind` needs and run its detector. Returns findings and the run's context
    (node → job, the writes to apply with the findings). SourceDown when the cluster's
    Prometheus does not answer a check that reads it."""
    ctx = Context(kind, cluster, now, limits)
    pulled = bool(cluster.prometheus_url) and kind in PULLED_METRICS
    if pulled:
        # The same loaders then read what it stored.
        plan_of = check_for(kind).pull_plan
        plan = plan_of(ctx) if plan_of is not None else None
        prometheus_pull(cluster, now=now, metrics=PULLED_METRICS[kind], plan=plan)
    findings = skip_maintenance(check_for(kind).run(ctx), ctx)
    if pulled:
        message = f"telemetry source {cluster.prometheus_url} answered"
        details = {"source": cluster.prometheus_url}
        findings.append(passed(kind, SOURCE_TARGET, message, details))
    return findings, ctx


def source_down_store(*, run: CheckRun, down: SourceDown, now: dt.datetime) -> int:
    """A run whose telemetry source did not answer: an `error` result naming the source,
    and the kind's passing results on the cluster turn to `error` (not checked) — no
    incident opens or resolves, no node changes state. Returns the results marked."""
    reason = str(down)[:2000]
    details = {"source": down.url, "reason": down.reason[:500]}
    result, created = CheckResult.objects.get_or_create(
        cluster=run.cluster,
        kind=run.kind,
        target=SOURCE_TARGET,
        defaults={
            "status": ResultStatus.ERROR,
            "message": reason,
            "details": details,
            "at": now,
            "run": run,
            "since": now,
        },
    )
    if not created:
        since = result.since if result.status == ResultStatus.ERROR else now
        CheckResult.objects.filter(pk=result.pk).update(
            status=ResultStatus.ERROR, message=reason, details=details, at=now, run=run, since=since
        )
    marked = CheckResult.objects.filter(
        cluster=run.cluster, kind=run.kind, status=ResultStatus.PASS
    ).update(
        status=ResultStatus.ERROR,
        message=f"not checked: {reason}"[:2000],
        at=now,
        run=run,
        since=now,
    )
    return marked + 1


# --- runs ------------------------------------------------------------------------------


# A run still queued one schedule interval after it was queued (this long for a kind with
# no schedule) is taken as lost by the broker — a broker restarted without its messages
# loses it — so a request or the schedule queues a new one rather than waiting on it; the
# lost one ends as `error` later (docs/checks.md, How a check run works).
QUEUED_MERGE_WITHIN = dt.timedelta(seconds=60)


@dataclass(frozen=True)
class RunsQueued:
    """What a request to run checks got: one run per kind asked, in that order, and the ids
    of those that were already queued (not yet started) before it — answered, not repeated."""

    runs: list[CheckRun]
    already_queued: list[int]


def runs_queue(*, cluster: Cluster, kinds: Sequence[str], requested_by: str) -> RunsQueued:
    """Queue one run per kind unless that kind is already queued, not yet started, for the
    cluster (then that run is the answer). The cluster's row is locked for the check, so
    twenty requests at once queue each kind once; the worker picks new runs up once this
    transaction commits."""
    from apps.health.tasks import run_check_task

    kinds = list(dict.fromkeys(kinds))
    with transaction.atomic():
        Cluster.objects.select_for_update(no_key=True).filter(pk=cluster.pk).exists()
        waiting: dict[str, CheckRun] = {}
        intervals = dict(
            CheckSchedule.objects.filter(cluster=cluster, kind__in=kinds).values_list(
                "kind", "interval_s"
            )
        )
        now = timezone.now()
        for run in CheckRun.objects.filter(
            cluster=cluster, kind__in=kinds, status=RunStatus.QUEUED
        ).order_by("queued_at", "id"):
            within = (
                dt.timedelta(seconds=intervals[run.kind])
                if run.kind in intervals
                else QUEUED_MERGE_WITHIN
            )
            if run.queued_at >= now - within:
                waiting.setdefault(run.kind, run)
        runs = [
            waiting.get(k)
            or CheckRun.objects.create(cluster=cluster, kind=k, requested_by=requested_by)
            for k in kinds
        ]
        options = cluster.task_options()  # a cluster with its own queue has workers of its own
        for run in runs:
            if run.kind not in waiting:
                transaction.on_commit(partial(run_check_task.apply_async, (run.pk,), **options))
    return RunsQueued(runs=runs, already_queued=[r.pk for r in waiting.values()])


def runs_request(*, cluster: Cluster, kinds: Sequence[str], requested_by: str) -> list[CheckRun]:
    """`runs_queue`'s runs: one per kind, a kind already queued answered by its run."""
    return runs_queue(cluster=cluster, kinds=kinds, requested_by=requested_by).runs


def run_execute(*, run_id: int, now: dt.datetime | None = None) -> CheckRun | None:
    """Claim a queued run (a conditional update: two workers never both run it), run its
    detector and apply the outcomes — in a transaction retried on a write conflict (a
    deadlock, a serialisation failure, a lock not available), so another writer winning a
    row is not the run's error. A failure marks the run `error` with the reason."""
    now = now or timezone.now()
    claimed = CheckRun.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(
        status=RunStatus.RUNNING, started_at=now
    )
    if not claimed:
        return None
    run = CheckRun.objects.select_related("cluster").get(pk=run_id)
    started = time.perf_counter()
    try:
        limits = limits_for(run.cluster)
        findings, ctx = detect(run.kind, run.cluster, now, limits)

        @atomic_with_retry
        def apply() -> dict[str, int]:
            # One applier at a time per cluster, the cluster's row first in the one lock
            # order (docs/architecture.md, Locks).
            Cluster.objects.select_for_update(no_key=True).filter(pk=run.cluster_id).first()
            counts = findings_apply(
                run=run, findings=findings, job_of_node=ctx.job_of_node, now=now, limits=limits
            )
            for write in ctx.writes:
                write()
            counts["pass"] += ctx.unchanged
            return counts

        counts = apply()
        run.status, run.counts = RunStatus.DONE, counts
    except SourceDown as down:  # no verdict without the data: errors, not passes
        log.warning("check run %s (%s): %s", run.pk, run.kind, down)
        with transaction.atomic():
            marked = source_down_store(run=run, down=down, now=now)
        run.status, run.error = RunStatus.ERROR, str(down)[:2000]
        run.counts = {"error": marked}
    except Exception as exc:  # a broken check must show as an error run, not vanish
        log.exception("check run %s (%s) failed", run.pk, run.kind)
        run.status, run.error = RunStatus.ERROR, f"{type(exc).__name__}: {exc}"[:2000]
    run.duration_s = time.perf_counter() - started
    run.save(update_fields=["status", "counts", "error", "duration_s"])
    return run


# A run still queued after this many of its intervals ends as an error: no worker took it
# (docs/operations.md, Watching the watcher).
UNCLAIMED_INTERVALS = 5
NO_WORKER = "no worker took it"


def runs_sweep_unclaimed(*, now: dt.datetime | None = None) -> int:
    """End as `error` ("no worker took it") every run still queued after 5 × its kind's
    interval (its cluster's schedule, else the plug-in's); a conditional update, so a run a
    worker claims meanwhile is left alone. Returns how many were ended."""
    now = now or timezone.now()
    intervals = {
        (c, k): i
        for c, k, i in CheckSchedule.objects.values_list("cluster_id", "kind", "interval_s")
    }
    shortest = min(
        [*intervals.values(), *(spec.interval_s for spec in CHECKS.values())], default=60
    )
    late = []
    for pk, cluster_id, kind, queued_at in CheckRun.objects.filter(
        status=RunStatus.QUEUED,
        queued_at__lt=now - dt.timedelta(seconds=UNCLAIMED_INTERVALS * shortest),
    ).values_list("pk", "cluster_id", "kind", "queued_at"):
        spec = CHECKS.get(kind)
        interval = intervals.get((cluster_id, kind), spec.interval_s if spec else shortest)
        if queued_at < now - dt.timedelta(seconds=UNCLAIMED_INTERVALS * interval):
            late.append(pk)
    if not late:
        return 0
    return CheckRun.objects.filter(pk__in=late, status=RunStatus.QUEUED).update(
        status=RunStatus.ERROR, error=NO_WORKER
    )


def runs_prune(*, older_than_days: int, now: dt.datetime | None = None) -> int:
    """Delete check runs queued more than `older_than_days` ago, in bounded batches; the
    results they wrote stay. Returns how many runs went."""
    cutoff = (now or timezone.now()) - dt.timedelta(days=older_than_days)
    return delete_in_batches(CheckRun.objects.filter(queued_at__lt=cutoff))


def runs_execute_now(
    *, cluster: Cluster, kinds: Sequence[str], requested_by: str
) -> list[CheckRun]:
    """Run checks synchronously (the `run_checks` command)."""
    runs = [
        CheckRun.objects.create(cluster=cluster, kind=k, requested_by=requested_by) for k in kinds
    ]
    return [r for run in runs if (r := run_execute(run_id=run.pk)) is not None]


# --- schedule --------------------------------------------------------------------------


def schedules_ensure() -> None:
    """Every cluster has a schedule row for every scheduled kind (at its plug-in's interval)."""
    have = set(CheckSchedule.objects.values_list("cluster_id", "kind"))
    CheckSchedule.objects.bulk_create(
        [
            CheckSchedule(cluster_id=c, kind=k, interval_s=CHECKS[k].interval_s)
            for c in Cluster.objects.values_list("pk", flat=True)
            for k in SCHEDULED_KINDS
            if (c, k) not in have
        ],
        ignore_conflicts=True,
    )


def schedules_claim_due(*, now: dt.datetime | None = None) -> list[CheckRun]:
    """Claim each due (cluster, kind) with a conditional update and queue a run for it;
    a second beat or worker doing the same at once claims nothing."""
    now = now or timezone.now()
    schedules_ensure()
    runs = []
    due = CheckSchedule.objects.filter(enabled=True).filter(
        Q(next_due_at__isnull=True) | Q(next_due_at__lte=now)
    )
    for sched in due.select_related("cluster"):
        claimed = (
            CheckSchedule.objects.filter(pk=sched.pk)
            .filter(Q(next_due_at__isnull=True) | Q(next_due_at__lte=now))
            .update(next_due_at=now + dt.timedelta(seconds=sched.interval_s))
        )
        if claimed:
            runs.extend(
                runs_request(cluster=sched.cluster, kinds=[sched.kind], requested_by="schedule")
            )
    return runs


# --- pre-flight ------------------------------------------------------------------------


def job_preflight(*, job: Job, now: dt.datetime | None = None) -> dict[str, object]:
    """`{ok, problems: [{node, reason}]}` for a job about to start; stored as its result."""
    now = now or timezone.now()
    rows = list(job.nodes.order_by("hostname").values_list("hostname", "state", "state_reason"))
    recent: dict[str, list[str]] = defaultdict(list)
    for hostname, kind in (
        CheckResult.objects.filter(
            node__in=job.nodes.all(), last_fail_at__gte=now - dt.timedelta(hours=1)
        )
        .exclude(kind=PREFLIGHT)
        .values_list("node__hostname", "kind")
        .distinct()
    ):
        if kind not in recent[hostname]:
            recent[hostname].append(kind)
    problems = d.preflight(rows, recent)
    status = "fail" if problems else "pass"
    CheckResult.objects.update_or_create(
        cluster_id=job.cluster_id,
        kind=PREFLIGHT,
        target=f"job:{job.pk}",
        defaults={
            "job": job,
            "status": status,
            "at": now,
            "since": now,
            "details": {"problems": problems},
            "message": counted(len(problems), "problem") if problems else "all nodes ready",
            "last_fail_at": now if problems else None,
        },
    )
    return {"ok": not problems, "problems": problems}
