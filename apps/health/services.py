"""Every write of the health app: check runs, their results and outcomes, schedules."""

from __future__ import annotations

import datetime as dt
import logging
import math
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import orjson
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.common.bulk import update_many
from apps.fleet.choices import NodeState, StateSource
from apps.fleet.models import Cluster, Node, NodeStateChange
from apps.fleet.services import node_set_state
from apps.health import detectors as d
from apps.health import inputs
from apps.health.choices import SCHEDULED_KINDS, CheckKind, RunStatus
from apps.health.models import CheckResult, CheckRun, CheckSchedule, Thresholds
from apps.incidents.choices import ACTIVE_STATUSES, Source
from apps.incidents.models import Incident, TimelineEntry
from apps.incidents.services import incident_note, incident_open
from apps.jobs.models import Job

log = logging.getLogger(__name__)

CATEGORIES = {
    CheckKind.HEARTBEAT: ("node_unreachable",),
    CheckKind.JOB_HANG: ("hang",),
    CheckKind.SLOW_NODE: ("slow_node",),
    CheckKind.SDC: ("silent_data_corruption",),
    CheckKind.GPU_ERRORS: ("gpu_hbm", "gpu"),
    CheckKind.THERMAL: ("gpu_thermal",),
}
STATE_RANK = {NodeState.HEALTHY: 0, NodeState.SUSPECT: 1, NodeState.DRAINED: 2, NodeState.DOWN: 3}
DRAINS = (NodeState.DRAINED, NodeState.DOWN)
FIRST_WINDOW = dt.timedelta(minutes=10)


def limits_for(cluster: Cluster) -> d.Limits:
    """The cluster's thresholds (created with the §5 defaults on first use)."""
    row, _ = Thresholds.objects.get_or_create(cluster=cluster)
    return d.Limits(**{name: getattr(row, name) for name in d.Limits.__dataclass_fields__})


def _previous_start(cluster: Cluster, kind: str, now: dt.datetime) -> dt.datetime:
    last = (
        CheckRun.objects.filter(
            cluster=cluster, kind=kind, status=RunStatus.DONE, started_at__lt=now
        )
        .order_by("-started_at")
        .values_list("started_at", flat=True)
        .first()
    )
    return last or now - FIRST_WINDOW


def detect(
    kind: str, cluster: Cluster, now: dt.datetime, limits: d.Limits
) -> tuple[list[d.Finding], dict[str, int]]:
    """Load what `kind` needs and run its detector. Returns findings and node → job."""
    jobs = inputs.running_jobs(cluster)
    job_of_node = inputs.job_of_node(jobs) if kind != CheckKind.JOB_HANG else {}
    if kind == CheckKind.HEARTBEAT:
        found = d.heartbeat(
            inputs.nodes_seen(cluster), now=now, limits=limits, cluster=cluster.name
        )
    elif kind == CheckKind.JOB_HANG:
        found = d.job_hang(inputs.job_progress(jobs, limits.hang_window), now=now, limits=limits)
    elif kind == CheckKind.SLOW_NODE:
        found = d.slow_node(
            inputs.node_timings(jobs, now),
            inputs.gpus_latest(cluster, ("gemm_tflops",)),
            limits=limits,
            job_names={j.pk: j.name for j in jobs},
        )
    elif kind == CheckKind.SDC:
        since = now - dt.timedelta(seconds=limits.sdc_round_s)
        found = d.sdc(
            inputs.non_finite(jobs, since),
            {j.pk: j.name for j in jobs},
            inputs.gpus_latest(cluster, ("gemm_checksum",)),
            limits=limits,
        )
    elif kind == CheckKind.GPU_ERRORS:
        since = _previous_start(cluster, kind, now)
        found = d.gpu_errors(
            inputs.gpu_events(cluster, since), inputs.gpus_latest(cluster)
        )  # GPUs: for pass
    elif kind == CheckKind.THERMAL:
        gpus = inputs.gpus_latest(cluster, ("temp_c", "mem_temp_c"))
        found = d.thermal(gpus, now=now, limits=limits)
    else:
        raise ValueError(f"{kind} does not run on a schedule")
    return found, job_of_node


# --- runs ------------------------------------------------------------------------------


def runs_request(*, cluster: Cluster, kinds: Sequence[str], requested_by: str) -> list[CheckRun]:
    """Queue one run per kind; the worker picks them up once this transaction commits."""
    from apps.health.tasks import run_check_task

    runs = [
        CheckRun.objects.create(cluster=cluster, kind=k, requested_by=requested_by) for k in kinds
    ]
    for run in runs:
        transaction.on_commit(lambda pk=run.pk: run_check_task.delay(pk))
    return runs


def run_check(*, run_id: int, now: dt.datetime | None = None) -> CheckRun | None:
    """Claim a queued run (a conditional update: two workers never both run it), run its
    detector and apply the outcomes. A failure marks the run `error` with the reason."""
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
        findings, job_of_node = detect(run.kind, run.cluster, now, limits)
        with transaction.atomic():
            Cluster.objects.select_for_update().filter(pk=run.cluster_id).first()  # one applier
            counts = apply_findings(
                run=run, findings=findings, job_of_node=job_of_node, now=now, limits=limits
            )
        run.status, run.counts = RunStatus.DONE, counts
    except Exception as exc:  # a broken check must show as an error run, not vanish
        log.exception("check run %s (%s) failed", run.pk, run.kind)
        run.status, run.error = RunStatus.ERROR, f"{type(exc).__name__}: {exc}"[:2000]
    run.duration_s = time.perf_counter() - started
    run.save(update_fields=["status", "counts", "error", "duration_s"])
    return run


def run_now(*, cluster: Cluster, kinds: Sequence[str], requested_by: str) -> list[CheckRun]:
    """Run checks synchronously (the `run_checks` command)."""
    runs = [
        CheckRun.objects.create(cluster=cluster, kind=k, requested_by=requested_by) for k in kinds
    ]
    return [r for run in runs if (r := run_check(run_id=run.pk)) is not None]


# --- outcomes --------------------------------------------------------------------------


def _clean(value: object) -> object:
    """JSON-safe details: non-finite floats become None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def apply_findings(
    *,
    run: CheckRun,
    findings: Sequence[d.Finding],
    job_of_node: dict[str, int],
    now: dt.datetime,
    limits: d.Limits,
) -> dict[str, int]:
    """Store results, open or update incidents, note clearings, change node states."""
    cluster = run.cluster
    nodes = {
        h: (pk, state)
        for h, pk, state in Node.objects.filter(cluster=cluster).values_list(
            "hostname", "pk", "state"
        )
    }
    cleared = _store_results(run, findings, nodes, now)
    opened = _incidents(run, findings, job_of_node, nodes, now)
    if cleared:
        _note_cleared(run, cleared, now)
    changed = _node_states(run, findings, nodes, now, limits)
    counts = Counter(f.status for f in findings)
    return {
        "pass": counts["pass"],
        "warn": counts["warn"],
        "fail": counts["fail"],
        "incidents_opened": opened,
        "nodes_changed": changed,
    }


def _store_results(
    run: CheckRun,
    findings: Sequence[d.Finding],
    nodes: dict[str, tuple[int, str]],
    now: dt.datetime,
) -> list[d.Finding]:
    """Upsert each target's result; return the findings that turned to pass."""
    existing = {
        target: (pk, status, message, since, last_fail)
        for target, pk, status, message, since, last_fail in CheckResult.objects.filter(
            cluster=run.cluster, kind=run.kind
        ).values_list("target", "pk", "status", "message", "since", "last_fail_at")
    }
    # Only results whose verdict or message changed are written: most of 10,000 GPUs pass
    # unchanged minute after minute, and their `at` stays when that pass was set (the
    # kind's last run time is on the run). Non-pass messages carry live figures, so they
    # are refreshed every run.
    new, updates, cleared = [], [], []
    for f in findings:
        node_id = nodes[f.node][0] if f.node in nodes else None
        last_fail = now if f.status == "fail" else None
        message = f.message[:2000]
        if f.target in existing:
            pk, status, old_message, since, prev_fail = existing[f.target]
            if status != "pass" and f.status == "pass":
                cleared.append(f)
            if status == f.status == "pass" and old_message == message:
                continue
            details = orjson.dumps(_clean(f.details)).decode()
            same_since = since if status == f.status else now
            updates.append(
                (pk, f.status, message, details, now, run.pk, same_since, last_fail or prev_fail)
            )
        else:
            new.append(
                CheckResult(
                    cluster=run.cluster,
                    kind=run.kind,
                    target=f.target,
                    node_id=node_id,
                    job_id=f.job,
                    status=f.status,
                    message=f.message[:2000],
                    details=_clean(f.details),
                    at=now,
                    run=run,
                    since=now,
                    last_fail_at=last_fail,
                )
            )
    CheckResult.objects.bulk_create(new, batch_size=2000)
    update_many(
        CheckResult._meta.db_table,
        ("id",),
        ("status", "message", "details", "at", "run_id", "since", "last_fail_at"),
        updates,
    )
    return cleared


def _key(f: d.Finding, job_of_node: dict[str, int]) -> tuple[str, str, object]:
    if f.target.startswith("cluster:"):
        return (f.category or "", "cluster", f.target)
    job = f.job if f.job is not None and f.node is None else None
    if f.interrupts_job:
        job = f.job if f.job is not None else job_of_node.get(f.node or "")
    if job is not None:
        return (f.category or "", "job", job)
    return (f.category or "", "node", f.node)


def _incidents(
    run: CheckRun,
    findings: Sequence[d.Finding],
    job_of_node: dict[str, int],
    nodes: dict[str, tuple[int, str]],
    now: dt.datetime,
) -> int:
    """One open incident per (category, job) or (category, node): update it, or open it."""
    groups: dict[tuple[str, str, object], list[d.Finding]] = defaultdict(list)
    for f in findings:
        if f.status != "pass" and f.category:
            groups[_key(f, job_of_node)].append(f)
    if not groups:
        return 0
    active = list(
        Incident.objects.filter(
            cluster=run.cluster, status__in=ACTIVE_STATUSES, category__in={k[0] for k in groups}
        ).prefetch_related("nodes")
    )
    by_job = {(i.category, i.job_id): i for i in active if i.job_id is not None}
    by_node = {(i.category, n.hostname): i for i in active for n in i.nodes.all()}
    by_print = {(i.category, i.fingerprint): i for i in active if i.fingerprint}
    node_objs = {
        n.hostname: n
        for n in Node.objects.filter(
            cluster=run.cluster,
            hostname__in={f.node for fs in groups.values() for f in fs if f.node},
        )
    }
    jobs = {j.pk: j for j in Job.objects.filter(pk__in={k[2] for k in groups if k[1] == "job"})}
    opened = 0
    for (category, scope, ident), items in groups.items():
        hosts = sorted({f.node for f in items if f.node})
        if scope == "job":
            incident = by_job.get((category, ident))
        elif scope == "cluster":
            incident = by_print.get((category, f"health:{ident}"))
        else:
            incident = by_node.get((category, ident))
        if incident is None:
            first = min(items, key=lambda f: f.occurred_at or now)
            worst = min(items, key=lambda f: f.severity)
            job = jobs.get(ident) if scope == "job" else None
            where = job.name if job else ident
            incident_open(
                cluster=run.cluster,
                title=f"{CheckKind(run.kind).label}: {where}"
                + (
                    f" ({', '.join(hosts[:3])}{' …' if len(hosts) > 3 else ''})"
                    if hosts and scope == "job"
                    else ""
                ),
                category=category,
                severity=worst.severity,
                detected_at=now,
                occurred_at=min(first.occurred_at or now, now),
                job=job,
                nodes=[node_objs[h] for h in hosts if h in node_objs],
                interrupts_job=job is not None and any(f.interrupts_job for f in items),
                description="\n".join(f.message for f in items[:20]),
                source=Source.HEALTH,
                fingerprint=f"health:{ident}" if scope == "cluster" else "",
                actor=f"check:{run.kind}",
            )
            opened += 1
        else:
            known = {n.hostname for n in incident.nodes.all()}
            added = [h for h in hosts if h not in known and h in node_objs]
            if added:
                incident.nodes.add(*[node_objs[h] for h in added])
                incident_note(
                    incident=incident,
                    kind=TimelineEntry.Kind.UPDATED,
                    actor=f"check:{run.kind}",
                    at=now,
                    text=f"also on {', '.join(added)}: "
                    + "; ".join(f.message for f in items if f.node in added)[:1000],
                )
    return opened


def _note_cleared(run: CheckRun, cleared: Sequence[d.Finding], now: dt.datetime) -> None:
    """Note in each still-open incident of this check that its condition cleared."""
    hosts = {f.node for f in cleared if f.node}
    jobs = {f.job for f in cleared if f.job is not None and f.node is None}
    incidents = Incident.objects.filter(
        Q(nodes__hostname__in=hosts) | Q(job_id__in=jobs),
        cluster=run.cluster,
        status__in=ACTIVE_STATUSES,
        source=Source.HEALTH,
        category__in=CATEGORIES.get(run.kind, ()),
    ).distinct()
    for incident in incidents:
        incident_note(
            incident=incident,
            kind=TimelineEntry.Kind.CLEARED,
            actor=f"check:{run.kind}",
            at=now,
            text=f"{CheckKind(run.kind).label} passes again; the incident stays "
            "open for an engineer to resolve",
        )


def _node_states(
    run: CheckRun,
    findings: Iterable[d.Finding],
    nodes: dict[str, tuple[int, str]],
    now: dt.datetime,
    limits: d.Limits,
) -> int:
    """Move nodes to the state the findings call for (never to a better one), within the
    hourly cap on automatic drains."""
    wanted: dict[str, d.Finding] = {}
    for f in findings:
        if f.status == "pass" or not f.node_state or f.node not in nodes:
            continue
        if f.node not in wanted or STATE_RANK[f.node_state] > STATE_RANK[wanted[f.node].node_state]:
            wanted[f.node] = f
    if not wanted:
        return 0
    cap = max(1, int(limits.drain_cap_share * len(nodes)))
    used = NodeStateChange.objects.filter(
        node__cluster=run.cluster,
        source=StateSource.CHECK,
        state__in=DRAINS,
        recorded_at__gte=now - dt.timedelta(hours=1),
    ).count()
    changed = 0
    node_rows = {
        n.hostname: n for n in Node.objects.filter(cluster=run.cluster, hostname__in=wanted)
    }
    for host, f in sorted(wanted.items()):
        current = nodes[host][1]
        if current not in STATE_RANK or STATE_RANK[f.node_state] <= STATE_RANK[current]:
            continue  # maintenance is the operator's; never improve a state automatically
        if f.node_state in DRAINS:
            if used >= cap:
                log.warning("drain cap (%s/h) reached: %s stays %s", cap, host, current)
                continue
            used += 1
        node_set_state(
            node=node_rows[host],
            state=f.node_state,
            reason=f"{run.kind}: {f.message}",
            at=now,
            source=StateSource.CHECK,
            by=f"check:{run.kind}",
        )
        changed += 1
    return changed


# --- schedule --------------------------------------------------------------------------


def schedules_ensure() -> None:
    """Every cluster has a schedule row for every scheduled kind (60 s by default)."""
    have = set(CheckSchedule.objects.values_list("cluster_id", "kind"))
    CheckSchedule.objects.bulk_create(
        [
            CheckSchedule(cluster_id=c, kind=k)
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


def preflight(*, job: Job, now: dt.datetime | None = None) -> dict[str, object]:
    """`{ok, problems: [{node, reason}]}` for a job about to start; stored as its result."""
    now = now or timezone.now()
    rows = list(job.nodes.order_by("hostname").values_list("hostname", "state", "state_reason"))
    recent: dict[str, list[str]] = defaultdict(list)
    for hostname, kind in (
        CheckResult.objects.filter(
            node__in=job.nodes.all(), last_fail_at__gte=now - dt.timedelta(hours=1)
        )
        .exclude(kind=CheckKind.PREFLIGHT)
        .values_list("node__hostname", "kind")
        .distinct()
    ):
        if kind not in recent[hostname]:
            recent[hostname].append(kind)
    problems = d.preflight(rows, recent)
    status = "fail" if problems else "pass"
    CheckResult.objects.update_or_create(
        cluster_id=job.cluster_id,
        kind=CheckKind.PREFLIGHT,
        target=f"job:{job.pk}",
        defaults={
            "job": job,
            "status": status,
            "at": now,
            "since": now,
            "details": {"problems": problems},
            "message": f"{len(problems)} problem(s)" if problems else "all nodes ready",
            "last_fail_at": now if problems else None,
        },
    )
    return {"ok": not problems, "problems": problems}
