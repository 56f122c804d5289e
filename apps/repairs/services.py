"""Every write of the repairs app (docs/repairs.md): opening repairs from the fleet's state
history, steps, returning a node, and burn-in.

How a drain opens a repair: the fleet imports no other app, so it does not tell this app
anything. This app reads the fleet's state history instead, as the scheduler reads the
actuation outbox: `repairs_sync` takes the `drained`/`down` changes written since it last
looked (a cursor on the change id, re-reading a margin behind it so a change committed late
is not missed; each change is taken once, `RepairChange` being unique per change). It runs
on a short beat tick (`repairs-sync`, every KUAE_REPAIRS_SYNC_S seconds) and before a
return; never from a page read (docs/repairs.md): until the tick has run, the pages show a
drained node's repair as being opened (`selectors.repairs_opening`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, Max, OuterRef, Q
from django.utils import timezone

from apps.fleet.choices import OUT_OF_SERVICE, NodeState
from apps.fleet.models import Node, NodeStateChange
from apps.fleet.services import node_set_state
from apps.health.choices import ResultStatus
from apps.health.inputs import gpus_latest
from apps.health.models import CheckResult
from apps.health.services import limits_for
from apps.incidents.choices import ACTIVE_STATUSES
from apps.incidents.models import Incident
from apps.repairs.burn_in import EVENT_KINDS, PROBE_KEYS, SinceEvent, Verdict, judge
from apps.repairs.choices import IN_SERVICE, LIVE, Closure, RepairAction, RepairStatus
from apps.repairs.models import OVERLAP, Cursor, Repair, RepairChange
from apps.telemetry.models import TelemetryEvent

log = logging.getLogger(__name__)

SOURCE = "repair"  # NodeStateChange.source of a return by this app
BATCH = 20_000  # change ids read per sync at most (a long history is read over several)
EVIDENCE_MAX = 20


def _incidents_at(node_id: int, at: dt.datetime) -> list[int]:
    """Ids of the incidents naming the node that were open at `at`."""
    return list(
        Incident.objects.filter(nodes=node_id, detected_at__lte=at + dt.timedelta(minutes=2))
        .filter(Q(resolved_at__isnull=True, status__in=ACTIVE_STATUSES) | Q(resolved_at__gte=at))
        .values_list("pk", flat=True)[:50]
    )


def _evidence_at(node_id: int, at: dt.datetime) -> list[dict[str, Any]]:
    """The node's failing and warning check results around `at`, newest first, as plain
    values (a copy: the results move on, the repair keeps what put the node out)."""
    near = Q(last_fail_at__gte=at - dt.timedelta(hours=1), last_fail_at__lte=at)
    rows = (
        CheckResult.objects.filter(node=node_id)
        .filter(Q(status__in=(ResultStatus.FAIL, ResultStatus.WARN)) | near)
        .order_by("-at")[:EVIDENCE_MAX]
    )
    return [
        {
            "kind": r.kind,
            "target": r.target,
            "status": r.status if r.status != ResultStatus.PASS else ResultStatus.FAIL,
            "message": r.message,
            "at": (r.last_fail_at or r.at).isoformat(),
        }
        for r in rows
    ]


def _merge_evidence(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen = {(e.get("kind"), e.get("target"), e.get("at")) for e in old}
    out = list(old)
    for e in new:
        if (e["kind"], e["target"], e["at"]) not in seen:
            out.append(e)
    return out[-EVIDENCE_MAX * 3 :]


def _returned_between(
    node_id: int, after: dt.datetime, before: dt.datetime
) -> NodeStateChange | None:
    """A change that put the node back in service in (after, before), by anyone but this
    app (its own returns close the repair themselves)."""
    return (
        NodeStateChange.objects.filter(
            node=node_id, state__in=IN_SERVICE, at__gt=after, at__lt=before
        )
        .exclude(source=SOURCE)
        .order_by("at", "id")
        .first()
    )


def _close_outside(repair: Repair, change: NodeStateChange) -> None:
    """Close a repair whose node was put back in service without it (a state change)."""
    repair.status = RepairStatus.CLOSED
    repair.closed_at = change.at
    repair.closed_how = Closure.OUTSIDE
    repair.closed_by = change.by or change.source
    repair.burn_in_note = (
        f"returned to {change.state} by {change.by or change.source} without burn-in"
        + (f": {change.reason}" if change.reason else "")
    )
    repair.save()


def _take(change: NodeStateChange, open_repair: Repair | None) -> tuple[Repair, bool]:
    """Open a repair for a drain/down `change`, or add it to the node's open one.
    Returns (repair, opened)."""
    if open_repair is not None:
        last = (
            RepairChange.objects.filter(repair=open_repair).aggregate(m=Max("change__at"))["m"]
            or open_repair.opened_at
        )
        back = _returned_between(change.node_id, last, change.at)
        if back is not None:
            _close_outside(open_repair, back)
            open_repair = None
    if open_repair is not None:
        RepairChange.objects.create(repair=open_repair, change=change)
        open_repair.evidence = _merge_evidence(
            open_repair.evidence, _evidence_at(change.node_id, change.at)
        )
        if open_repair.status == RepairStatus.BURN_IN:
            open_repair.status = RepairStatus.OPEN
            open_repair.burn_in_note = (
                f"burn-in stopped: {change.state} again by {change.by or change.source}"
                + (f" ({change.reason})" if change.reason else "")
            )
        open_repair.save()
        open_repair.incidents.add(*_incidents_at(change.node_id, change.at))
        return open_repair, False
    repair = Repair.objects.create(
        node_id=change.node_id,
        opened_at=change.at,
        reason=change.reason or f"{change.state} by {change.by or change.source}",
        evidence=_evidence_at(change.node_id, change.at),
    )
    RepairChange.objects.create(repair=repair, change=change)
    repair.incidents.add(*_incidents_at(change.node_id, change.at))
    return repair, True


def _pending(cursor: int, upto: int) -> Iterable[NodeStateChange]:
    taken = RepairChange.objects.filter(change=OuterRef("pk"))
    return (
        NodeStateChange.objects.filter(
            id__gt=max(0, cursor - OVERLAP), id__lte=upto, state__in=OUT_OF_SERVICE
        )
        .filter(~Exists(taken))
        .order_by("id")
    )


def repairs_sync() -> dict[str, int]:
    """Open a repair for every drain or down written since the last look (or add it to the
    node's open one), and close the repairs whose node was put back in service without
    one (a plain state change to healthy or suspect). Cheap when nothing is new."""
    cursor_id = Cursor.objects.filter(pk=1).values_list("last_change_id", flat=True).first() or 0
    top = NodeStateChange.objects.aggregate(m=Max("id"))["m"] or 0
    stray = Repair.objects.filter(status__in=LIVE, node__state__in=IN_SERVICE).exists()
    if top <= cursor_id and not stray:
        return {"opened": 0, "added": 0, "closed": 0}
    opened = added = closed = 0
    with transaction.atomic():
        cursor, _ = Cursor.objects.select_for_update().get_or_create(pk=1)
        upto = min(top, cursor.last_change_id + BATCH)
        live = {r.node_id: r for r in Repair.objects.select_for_update().filter(status__in=LIVE)}
        for change in _pending(cursor.last_change_id, upto):
            repair, new = _take(change, live.get(change.node_id))
            live[change.node_id] = repair
            opened += new
            added += not new
        cursor.last_change_id = max(cursor.last_change_id, upto)
        cursor.save(update_fields=["last_change_id"])
        for repair in Repair.objects.select_for_update().filter(
            status__in=LIVE, node__state__in=IN_SERVICE
        ):
            back = (
                NodeStateChange.objects.filter(node=repair.node_id, state__in=IN_SERVICE)
                .exclude(source=SOURCE)
                .order_by("-at", "-id")
                .first()
            )
            if back is not None:
                _close_outside(repair, back)
                closed += 1
    if opened or added or closed:
        log.info("repairs: %d opened, %d added to, %d closed outside", opened, added, closed)
    return {"opened": opened, "added": added, "closed": closed}


@dataclass(frozen=True)
class Step:
    """One thing done to the node."""

    action: str
    note: str = ""
    ticket: str = ""
    by: str = ""
    at: dt.datetime | None = None

    def as_json(self, *, by: str, now: dt.datetime) -> dict[str, Any]:
        """The step as stored: `at` defaults to now, `by` to who wrote it."""
        if self.action not in RepairAction.values:
            raise ValidationError({"action": [f"one of {', '.join(RepairAction.values)}"]})
        step: dict[str, Any] = {
            "action": self.action,
            "at": (self.at or now).isoformat(),
            "by": self.by or by,
            "note": self.note,
        }
        if self.ticket:
            step["ticket"] = self.ticket
        return step


def repair_update(
    *, repair: Repair, by: str, steps: list[Step] | None = None, reason: str | None = None
) -> Repair:
    """Replace the repair's steps and/or reason (PATCH)."""
    now = timezone.now()
    fields = ["updated_at"]
    if steps is not None:
        repair.steps = [s.as_json(by=by, now=now) for s in steps]
        fields.append("steps")
    if reason is not None:
        repair.reason = reason
        fields.append("reason")
    repair.save(update_fields=fields)
    return repair


def step_add(*, repair: Repair, step: Step, by: str) -> Repair:
    """Add one step to the repair (the page's form)."""
    with transaction.atomic():
        repair = Repair.objects.select_for_update().get(pk=repair.pk)
        repair.steps = [*repair.steps, step.as_json(by=by, now=timezone.now())]
        repair.save(update_fields=["steps", "updated_at"])
    return repair


def _return_now(repair: Repair, node: Node, *, reason: str, by: str, how: str) -> None:
    """The node back to healthy (source `repair`) and the repair closed, in one transaction.
    The one automatic improvement of a state: the checks never improve one."""
    change = node_set_state(node=node, state=NodeState.HEALTHY, reason=reason, source=SOURCE, by=by)
    repair.status = RepairStatus.CLOSED
    repair.closed_at = change.at
    repair.closed_how = how
    repair.closed_by = by
    repair.save()


def node_return(
    *, node: Node, by: str, skip_burn_in: bool = False, now: dt.datetime | None = None
) -> Repair:
    """An operator returns the node: its open repair goes to burn-in (the node stays out
    until a fresh probe passes) or, with `skip_burn_in`, the node is healthy at once and the
    repair closes, recorded as such. A node without an open repair is a ValidationError
    (naming `node`): every drained or down node has one, so there is nothing to return."""
    repairs_sync()
    now = now or timezone.now()
    with transaction.atomic():
        node = Node.objects.select_related("cluster").get(pk=node.pk)
        repair = Repair.objects.select_for_update().filter(node=node, status__in=LIVE).first()
        if repair is None:
            raise ValidationError(
                {"node": [f"{node.hostname} has no open repair ({node.state}): nothing to return"]}
            )
        if skip_burn_in:
            repair.skip_burn_in = True
            repair.return_requested_at = now
            repair.return_requested_by = by
            repair.burn_in_note = f"returned without burn-in by {by}"
            _return_now(
                repair,
                node,
                reason=f"repair #{repair.pk}: returned without burn-in by {by}",
                by=by,
                how=Closure.SKIPPED,
            )
            return repair
        if repair.status == RepairStatus.BURN_IN:
            return repair  # already waiting: the first request's time stands
        repair.status = RepairStatus.BURN_IN
        repair.return_requested_at = now
        repair.return_requested_by = by
        repair.burn_in_note = "waiting for a GEMM probe newer than the return"
        repair.burn_in_checked_at = None
        repair.save()
    return repair


def _events_since(node: Node, since: dt.datetime) -> list[SinceEvent]:
    return [
        SinceEvent(gpu, kind, code, at)
        for gpu, kind, code, at in TelemetryEvent.objects.filter(
            node=node, kind__in=EVENT_KINDS, at__gt=since
        )
        .order_by("at")
        .values_list("gpu", "kind", "code", "at")[:100]
    ]


def burn_in_evaluate(*, repair: Repair, now: dt.datetime | None = None) -> Verdict:
    """Judge one burn-in: pass → the node is healthy and the repair closes; fail → the
    repair goes back to open, the node stays out, the note says why; wait → noted."""
    now = now or timezone.now()
    node = Node.objects.select_related("cluster").get(pk=repair.node_id)
    requested = repair.return_requested_at or now
    if node.state not in OUT_OF_SERVICE:
        verdict = Verdict("wait", f"the node is {node.state}: burn-in resumes when it is out")
    elif node.cluster.automation_paused:
        verdict = Verdict("wait", "automation is paused on this cluster: no state changes")
    else:
        verdict = judge(
            hostname=node.hostname,
            requested_at=requested,
            gpus=gpus_latest(node.cluster, PROBE_KEYS),
            events=_events_since(node, requested),
            limits=limits_for(node.cluster),
        )
    with transaction.atomic():
        repair = Repair.objects.select_for_update().get(pk=repair.pk)
        if repair.status != RepairStatus.BURN_IN:
            return verdict  # changed meanwhile (drained again, returned by hand)
        repair.burn_in_checked_at = now
        if verdict.outcome == "pass":
            repair.burn_in_note = f"burn-in passed: {verdict.note}"
            _return_now(
                repair,
                node,
                reason=f"repair #{repair.pk}: burn-in passed",
                by=SOURCE,
                how=Closure.BURN_IN,
            )
        elif verdict.outcome == "fail":
            repair.status = RepairStatus.OPEN
            repair.burn_in_note = f"burn-in failed, the node stays out: {verdict.note}"
            repair.save()
        else:
            repair.burn_in_note = verdict.note
            repair.save(update_fields=["burn_in_note", "burn_in_checked_at", "updated_at"])
    return verdict


def burn_ins_evaluate(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Judge every repair in burn-in (the beat tick)."""
    counts = {"pass": 0, "fail": 0, "wait": 0}
    for repair in Repair.objects.filter(status=RepairStatus.BURN_IN).order_by("id"):
        counts[burn_in_evaluate(repair=repair, now=now).outcome] += 1
    return counts


def repairs_tick() -> dict[str, int]:
    """The beat task's work: read new drains and downs, then judge the burn-ins."""
    return {**repairs_sync(), **burn_ins_evaluate()}
