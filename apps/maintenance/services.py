"""Every write of the maintenance app (docs/maintenance.md): booking a window, putting its nodes
in `maintenance` when it starts and giving them back when it ends, the planned
interruptions of the jobs running on its nodes, and the Alertmanager alerts it silences."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.common.hostnames import HostlistError, Hostlists
from apps.fleet.choices import NodeState, StateSource
from apps.fleet.models import Cluster, Node, NodeStateChange
from apps.fleet.services import node_set_state
from apps.fleet.validators import nodes_named
from apps.incidents.alertmanager import Alert
from apps.incidents.choices import ACTIVE_STATUSES, Category, IncidentStatus, Severity
from apps.incidents.models import Incident
from apps.incidents.services import incident_open, incident_update
from apps.jobs.choices import JobStatus
from apps.jobs.models import Job
from apps.maintenance.choices import WindowStatus
from apps.maintenance.models import MaintenanceWindow, SilencedAlert, WindowNode
from apps.maintenance.selectors import TouchedJob, jobs_touched

log = logging.getLogger(__name__)

PAST_SLACK = dt.timedelta(minutes=5)  # a start this far back is "now" (a form's default)
ACTOR = "maintenance"


def fingerprint_of(window: MaintenanceWindow) -> str:
    """The fingerprint of the planned interruptions a window opens."""
    return f"maintenance:{window.pk}"


# --- booking ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Booking:
    """What `POST maintenance/` asks for, its references not yet resolved."""

    cluster: Cluster
    start: dt.datetime
    end: dt.datetime
    reason: str
    nodes: str | list[str] | None = None
    racks: list[str] | None = None
    # The running jobs the client was told the window stops (`confirm_jobs`); None: not asked.
    confirm_jobs: list[int] | None = None


class JobsNotConfirmed(Exception):
    """The window would stop running jobs other than those the booking confirmed: nothing
    is booked, and the answer names the jobs (docs/maintenance.md, Booking a window)."""

    def __init__(self, touched: list[TouchedJob]) -> None:
        super().__init__(touched)
        self.touched = touched


def window_nodes_resolve(
    *, cluster: Cluster, nodes: str | Sequence[str] | None, racks: Sequence[str] | None
) -> list[Node]:
    """The cluster's nodes named by a hostlist expression (or a list of hostnames or
    expressions) and by racks; a ValidationError naming `nodes` or `racks` for an unknown
    node or rack, a hostlist that is not one or is past its bound, or nothing at all."""
    errors: dict[str, list[str]] = {}
    wanted: list[str] = []
    hostlists = Hostlists()  # one bound on names for the whole request (docs/operations.md, Limits)
    expressions = [nodes] if isinstance(nodes, str) else list(nodes or [])
    try:
        for expression in expressions:
            wanted.extend(hostlists.hostnames(expression.strip()))
    except HostlistError as exc:
        errors["nodes"] = [str(exc)]
    found: dict[int, Node] = {}
    if wanted and "nodes" not in errors:
        named = nodes_named(cluster_id=cluster.pk, hostnames=wanted)
        if named.unknown:
            shown = ", ".join(named.unknown[:20]) + (" …" if len(named.unknown) > 20 else "")
            errors["nodes"] = [f"not nodes of cluster {cluster.name}: {shown}"]
        found.update({n.pk: n for n in named.nodes.values()})
    if racks:
        in_racks = list(Node.objects.filter(cluster=cluster, rack__in=list(racks)))
        unknown = sorted(set(racks) - {n.rack for n in in_racks})
        if unknown:
            errors["racks"] = [f"no node of cluster {cluster.name} is in rack {', '.join(unknown)}"]
        found.update({n.pk: n for n in in_racks})
    if errors:
        raise ValidationError(errors)
    if not found:
        raise ValidationError({"nodes": ["name at least one node (a hostlist or racks)"]})
    return sorted(found.values(), key=lambda n: n.hostname)


def _overlapping(nodes: Sequence[Node], start: dt.datetime, end: dt.datetime) -> dict[str, int]:
    """hostname → the window (not cancelled) that already covers it somewhere in [start, end)."""
    return dict(
        WindowNode.objects.filter(
            node__in=[n.pk for n in nodes], window__start__lt=end, window__end__gt=start
        )
        .exclude(window__status=WindowStatus.CANCELLED)
        .values_list("node__hostname", "window_id")
    )


@transaction.atomic
def window_book(*, booking: Booking, by: str, now: dt.datetime | None = None) -> MaintenanceWindow:
    """Book a window; one that starts now (or a moment ago) is applied at once. Bad input
    is a ValidationError naming its field: an end not after the start, a window already
    over, a start far in the past, unknown nodes or racks, none at all, or nodes already in
    another window at that time. With `confirm_jobs`, JobsNotConfirmed when the jobs
    running on the nodes are not exactly those."""
    now = now or timezone.now()
    start, end = booking.start, booking.end
    if end <= start:
        raise ValidationError({"end": ["must be after start"]})
    if start < now - PAST_SLACK:
        raise ValidationError({"start": ["is in the past (a window starts now at the earliest)"]})
    if not booking.reason.strip():
        raise ValidationError({"reason": ["say what the work is"]})
    nodes = window_nodes_resolve(cluster=booking.cluster, nodes=booking.nodes, racks=booking.racks)
    # The cluster's row first (docs/architecture.md, Locks): two bookings of its nodes take
    # turns, so the second sees the first's window in its overlap check — never both booked.
    Cluster.objects.select_for_update(no_key=True).filter(pk=booking.cluster.pk).exists()
    taken = _overlapping(nodes, start, end)
    if taken:
        shown = ", ".join(f"{h} (#{w})" for h, w in sorted(taken.items())[:20])
        raise ValidationError({"nodes": [f"already in a maintenance window then: {shown}"]})
    if booking.confirm_jobs is not None:
        touched = jobs_touched(nodes)
        if sorted({t.job.pk for t in touched}) != sorted(set(booking.confirm_jobs)):
            raise JobsNotConfirmed(touched)
    asked = booking.nodes if isinstance(booking.nodes, str) else ",".join(booking.nodes or [])
    window = MaintenanceWindow.objects.create(
        cluster=booking.cluster,
        start=start,
        end=end,
        reason=booking.reason.strip(),
        asked_nodes=asked[:10_000],
        racks=list(booking.racks or []),
        created_by=by,
    )
    WindowNode.objects.bulk_create([WindowNode(window=window, node=n) for n in nodes])
    if start <= now:
        window_start(window=window, now=now)
        window.refresh_from_db()
    return window


# --- start and end ---------------------------------------------------------------------


@transaction.atomic
def window_start(*, window: MaintenanceWindow, now: dt.datetime | None = None) -> bool:
    """Put the window's nodes in `maintenance` (a state change at its start, source
    `maintenance`, remembering each node's state) and open a planned interruption for each
    job running on them. Claimed with a conditional update: done once, whoever calls it.
    Returns whether this call started it."""
    now = now or timezone.now()
    claimed = MaintenanceWindow.objects.filter(
        pk=window.pk, status=WindowStatus.SCHEDULED, start__lte=now
    ).update(status=WindowStatus.ACTIVE, started_at=now)
    if not claimed:
        return False
    window.refresh_from_db()
    reason = f"maintenance window #{window.pk}: {window.reason}"[:500]
    links = list(
        WindowNode.objects.filter(window=window).select_related("node").order_by("node_id")
    )  # nodes by pk, the one lock order (docs/architecture.md, Locks)
    for link in links:
        node = link.node
        link.state_before = node.state
        link.change = node_set_state(
            node=node,
            state=NodeState.MAINTENANCE,
            reason=reason,
            at=max(window.start, node.in_service_at),
            source=StateSource.MAINTENANCE,
            by=window.created_by,
        )
        link.save(update_fields=["state_before", "change"])
    _interrupt_jobs(window, [link.node for link in links])
    return True


def _interrupt_jobs(window: MaintenanceWindow, nodes: Sequence[Node]) -> list[Incident]:
    """A planned `host_maintenance` interruption for each job running on the window's
    nodes when it starts (docs/maintenance.md, What a window does)."""
    ids = {n.pk for n in nodes}
    jobs = (
        Job.objects.filter(status=JobStatus.RUNNING, nodes__in=ids)
        .distinct()
        .prefetch_related("nodes")
        .order_by("-gpu_count", "pk")
    )
    opened = []
    for job in jobs:
        stopped = [n for n in job.nodes.all() if n.pk in ids]
        names = ", ".join(n.hostname for n in stopped[:10]) + (" …" if len(stopped) > 10 else "")
        occurred = max(window.start, job.started_at or window.start)
        opened.append(
            incident_open(
                cluster=window.cluster,
                title=f"Planned maintenance (window #{window.pk}) on the nodes of {job.name}"[:200],
                category=Category.HOST_MAINTENANCE,
                severity=Severity.SEV4,
                occurred_at=occurred,
                detected_at=occurred,
                job=job,
                nodes=stopped,
                interrupts_job=True,
                planned=True,
                description=f"Maintenance window #{window.pk} on {names}: {window.reason}",
                fingerprint=fingerprint_of(window),
                details={"maintenance_window": window.pk},
                actor=window.created_by or ACTOR,
            )
        )
    return opened


@transaction.atomic
def window_end(
    *, window: MaintenanceWindow, now: dt.datetime | None = None, by: str = ""
) -> MaintenanceWindow:
    """End the window at `now` (DELETE) or at its `end` (the beat task): a window that has
    not begun is cancelled; one in progress gives each node back the state it had, unless
    someone changed it meanwhile (its newest change is no longer the window's), and its
    planned interruptions recover at the end."""
    now = now or timezone.now()
    window = MaintenanceWindow.objects.select_for_update().get(pk=window.pk)
    if window.status in (WindowStatus.ENDED, WindowStatus.CANCELLED):
        return window
    if window.status == WindowStatus.SCHEDULED and window.start > now:
        window.status, window.ended_at, window.ended_by = WindowStatus.CANCELLED, now, by
        window.save(update_fields=["status", "ended_at", "ended_by"])
        return window
    if window.status == WindowStatus.SCHEDULED:  # due, and never applied: apply it first
        window_start(window=window, now=now)
        window.refresh_from_db()
    end = min(window.end, now)
    window.end = max(end, window.start + dt.timedelta(microseconds=1))
    window.status, window.ended_at, window.ended_by = WindowStatus.ENDED, now, by
    window.save(update_fields=["end", "status", "ended_at", "ended_by"])
    _restore(window)
    _recover_jobs(window, by=by or ACTOR)
    return window


def _restore(window: MaintenanceWindow) -> None:
    """Give each node back the state it had when the window began, where the window's
    change is still its newest."""
    links = list(
        WindowNode.objects.filter(window=window).select_related("node").order_by("node_id")
    )  # nodes by pk, the one lock order (docs/architecture.md, Locks)
    newest: dict[int, int] = {}
    for node_id, change_id in (
        NodeStateChange.objects.filter(node__in=[link.node_id for link in links])
        .order_by("node_id", "-at", "-id")
        .values_list("node_id", "id")
    ):
        newest.setdefault(node_id, change_id)
    for link in links:
        if link.change_id is None or newest.get(link.node_id) != link.change_id:
            link.restored = False  # someone changed it meanwhile: theirs stands
        else:
            node_set_state(
                node=link.node,
                state=link.state_before or NodeState.HEALTHY,
                reason=f"maintenance window #{window.pk} ended",
                at=window.end,
                source=StateSource.MAINTENANCE,
                by=window.ended_by or window.created_by,
            )
            link.restored = True
        link.save(update_fields=["restored"])


def _recover_jobs(window: MaintenanceWindow, *, by: str) -> None:
    """The window's planned interruptions recover (and resolve) when it ends."""
    for incident in Incident.objects.filter(
        fingerprint=fingerprint_of(window), status__in=ACTIVE_STATUSES
    ):
        at = max(window.end, incident.detected_at)
        changes: dict[str, object] = {"status": IncidentStatus.RESOLVED, "resolved_at": at}
        if incident.recovered_at is None:
            changes["recovered_at"] = at
        incident_update(incident=incident, changes=changes, actor=by)


def windows_tick(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Start the windows whose start has come and end those whose end has: the beat task.
    Each window in its own transaction, so one failing does not hold back the others."""
    now = now or timezone.now()
    started = ended = 0
    due = MaintenanceWindow.objects.filter(status=WindowStatus.SCHEDULED, start__lte=now)
    for window in due.filter(end__gt=now):
        try:
            started += window_start(window=window, now=now)
        except Exception:
            log.exception("maintenance window %s did not start", window.pk)
    over = MaintenanceWindow.objects.filter(
        status__in=(WindowStatus.SCHEDULED, WindowStatus.ACTIVE), end__lte=now
    )
    for window in over:
        try:
            window_end(window=window, now=now)
            ended += 1
        except Exception:
            log.exception("maintenance window %s did not end", window.pk)
    return {"started": started, "ended": ended}


# --- Alertmanager ----------------------------------------------------------------------


def alerts_silence(alerts: Sequence[tuple[Alert, Node]], now: dt.datetime) -> set[str]:
    """Keep each firing alert naming a node of a window in progress on that window (one row
    per window and fingerprint; deliveries counted), and the resolution of one already kept
    on its row. Returns the fingerprints kept: the intake opens no incident for them."""
    node_ids = {node.pk for _, node in alerts}
    window_of: dict[int, int] = {}
    for node_id, covering in (
        WindowNode.objects.filter(node__in=node_ids, window__start__lte=now, window__end__gt=now)
        .exclude(window__status__in=(WindowStatus.CANCELLED, WindowStatus.ENDED))
        .order_by("window__start", "window_id")
        .values_list("node_id", "window_id")
    ):
        window_of.setdefault(node_id, covering)
    kept: dict[str, int] = {
        fp: window_id
        for fp, window_id in SilencedAlert.objects.filter(
            fingerprint__in=[a.fingerprint for a, _ in alerts]
        )
        .order_by("received_at", "id")
        .values_list("fingerprint", "window_id")
    }
    out: set[str] = set()
    for alert, node in alerts:
        # A firing alert goes to its node's window; a resolution to the row that kept it.
        window_id = window_of.get(node.pk) if alert.firing else kept.get(alert.fingerprint)
        if window_id is None:
            continue
        _silenced_upsert(window_id, alert, node, now)
        out.add(alert.fingerprint)
    return out


def _silenced_upsert(window_id: int, alert: Alert, node: Node, now: dt.datetime) -> None:
    values = {
        "node": node,
        "alertname": alert.name[:200],
        "labels": alert.labels,
        "annotations": alert.annotations,
        "status": SilencedAlert.Status.FIRING if alert.firing else SilencedAlert.Status.RESOLVED,
        "starts_at": alert.starts_at,
        "ends_at": alert.ends_at,
        "received_at": now,
    }
    rows = SilencedAlert.objects.filter(window_id=window_id, fingerprint=alert.fingerprint)
    if rows.update(deliveries=F("deliveries") + 1, **values):
        return
    try:
        with transaction.atomic():
            SilencedAlert.objects.create(
                window_id=window_id, fingerprint=alert.fingerprint, first_received_at=now, **values
            )
    except IntegrityError:  # a concurrent delivery of the same alert kept it first
        rows.update(deliveries=F("deliveries") + 1, **values)
