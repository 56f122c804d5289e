"""The actuation outbox (docs/slurm.md, Actuation): a drain or resume request written with the
state change it follows, in its transaction, then delivered to the cluster's scheduler. The
fleet knows no scheduler: `actuation_request` is lent to its `node_set_state` at start-up
(`fleet/transitions.py`, from `SchedulerConfig.ready()`)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence

from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from apps.fleet.choices import OUT_OF_SERVICE, ActuationMode, NodeState, StateSource
from apps.fleet.models import Cluster, Node, NodeStateChange
from apps.scheduler.choices import ActuationAction, ActuationResult
from apps.scheduler.connection import (
    SchedulerConnection,
    SchedulerRefused,
    SchedulerUnavailable,
    connection_for,
)
from apps.scheduler.models import Actuation
from apps.scheduler.slurm_nodes import SlurmFormatError, SlurmNode, parse_nodes

REASON_CHARS = 120  # Slurm shows reasons in one column of `sinfo -R`: keep them short
LEASE = dt.timedelta(minutes=5)  # a claimed actuation is retried after this if its worker died
BACKOFF_MAX_S = 300
BATCH = 200
HELD = "held"  # a delivery outcome, not a stored result: stays pending, no try counted
_UNSAFE = re.compile(r"[^\w .,:;#/()+=@%<>\-]+")


def actuation_reason(change: NodeStateChange) -> str:
    """`kuae #<state change>: <why>`, short and quoting-safe: the number makes it traceable
    to the node's history, the prefix tells a person (and KUAE) that KUAE set it."""
    text = _UNSAFE.sub(" ", change.reason).strip()
    head = f"kuae #{change.pk}: "
    return head + text[: REASON_CHARS - len(head)]


def is_kuae_reason(reason: str) -> bool:
    """Did KUAE write this scheduler reason? Only such drains are KUAE's to resume."""
    return reason.strip().lower().startswith("kuae")


def actuation_request(
    *, node: Node, change: NodeStateChange, before: str, after: str
) -> Actuation | None:
    """Queue what the scheduler must do now that the node went from `before` to `after`;
    called inside the state change's transaction. None when nothing is to be sent: the
    cluster's actuation is off, the change came from the scheduler itself, or the node
    neither left nor re-entered service."""
    if change.source == StateSource.SLURM:
        return None  # mirrored from Slurm: sending it back would echo
    cluster = Cluster.objects.only(
        "actuation", "automation_paused", "automation_by", "automation_reason"
    ).get(pk=node.cluster_id)
    if cluster.actuation == ActuationMode.OFF:
        return None
    was_out, is_out = before in OUT_OF_SERVICE, after in OUT_OF_SERVICE
    if is_out and not was_out:
        action = ActuationAction.DRAIN
    elif was_out and after == NodeState.HEALTHY:
        action = ActuationAction.RESUME
    else:
        return None
    dry = cluster.actuation == ActuationMode.DRY_RUN
    held = ""
    if cluster.automation_paused:  # paused: nothing goes to the scheduler; the row says why
        held = f"automation paused by {cluster.automation_by}: {cluster.automation_reason}"
    elif dry:
        held = "dry run: recorded, not sent"
    return Actuation.objects.create(
        node=node,
        state_change=change,
        action=action,
        reason=actuation_reason(change),
        requested_at=change.recorded_at,
        next_try_at=change.recorded_at,
        result=ActuationResult.SKIPPED if held else ActuationResult.PENDING,
        error=held[:500],
    )


def actuations_claim(
    *, cluster: Cluster | None = None, now: dt.datetime | None = None
) -> list[int]:
    """Claim up to BATCH due actuations (oldest first) for one delivery round: their next
    try moves a lease ahead, so another worker skips them and a worker that dies mid-way
    leaves them to be retried, never lost."""
    now = now or timezone.now()
    with transaction.atomic():
        due = Actuation.objects.filter(result=ActuationResult.PENDING, next_try_at__lte=now)
        if cluster is not None:
            due = due.filter(node__cluster=cluster)
        rows = list(
            due.select_for_update(skip_locked=True)
            .order_by("id")
            .values_list("pk", "node_id")[:BATCH]
        )
        # A node's requests go out in the order they were asked for: one waiting on its
        # backoff (or held by another worker) holds back the later ones for that node.
        first_waiting = dict(
            Actuation.objects.filter(
                result=ActuationResult.PENDING, node_id__in={node for _, node in rows}
            )
            .exclude(pk__in=[pk for pk, _ in rows])
            .values("node_id")
            .annotate(first=Min("id"))
            .values_list("node_id", "first")
        )
        ids = [pk for pk, node in rows if pk < first_waiting.get(node, pk + 1)]
        Actuation.objects.filter(pk__in=ids).update(next_try_at=now + LEASE)
    return ids


def actuations_deliver(
    *, cluster: Cluster | None = None, conn: SchedulerConnection | None = None
) -> dict[str, int]:
    """Send due drains and resumes to their clusters' schedulers, in the order they were
    asked for; a node's later request waits while an earlier one is still pending. A
    resume is sent only for a drain KUAE set (Slurm's reason starts with `kuae`); a drain is
    not laid over one a person set in Slurm."""
    ids = actuations_claim(cluster=cluster)
    if not ids:
        return {}
    rows = list(Actuation.objects.filter(pk__in=ids).select_related("node__cluster").order_by("id"))
    counts: dict[str, int] = {}
    for cluster_rows in _by_cluster(rows):
        target = cluster_rows[0].node.cluster
        link = conn if cluster is not None and conn is not None else connection_for(target)
        for row, result, error in _deliver_cluster(target, link, cluster_rows):
            _record(row, result, error)
            counts[result] = counts.get(result, 0) + 1
    return counts


def _by_cluster(rows: Iterable[Actuation]) -> list[list[Actuation]]:
    groups: dict[int, list[Actuation]] = {}
    for row in rows:
        groups.setdefault(row.node.cluster_id, []).append(row)
    return list(groups.values())


def _deliver_cluster(
    cluster: Cluster, conn: SchedulerConnection | None, rows: Sequence[Actuation]
) -> Iterable[tuple[Actuation, str, str]]:
    if cluster.automation_paused:  # paused: held, not sent, not counted as a try
        for row in rows:
            yield row, HELD, f"held: automation paused by {cluster.automation_by}"
        return
    if cluster.actuation != ActuationMode.ON:  # turned off or to dry run since it was asked
        for row in rows:
            yield row, ActuationResult.SKIPPED, f"actuation is {cluster.actuation}: not sent"
        return
    if conn is None:
        for row in rows:
            yield row, ActuationResult.FAILED, f"cluster {cluster.name} names no Slurm connection"
        return
    try:
        seen = {n.name: n for n in parse_nodes(conn.nodes())}
    except (SchedulerUnavailable, SlurmFormatError, SchedulerRefused) as exc:
        for row in rows:
            yield row, ActuationResult.PENDING, f"{conn.describe()}: {exc}"
        return
    waiting: set[int] = set()
    for row in rows:
        if row.node_id in waiting:
            yield row, ActuationResult.PENDING, "waits for an earlier request for this node"
            continue
        result, error = _deliver_one(conn, row, seen.get(row.node.hostname))
        if result == ActuationResult.PENDING:
            waiting.add(row.node_id)
        yield row, result, error


def _deliver_one(
    conn: SchedulerConnection, row: Actuation, slurm: SlurmNode | None
) -> tuple[str, str]:
    host = row.node.hostname
    if slurm is None:
        return ActuationResult.FAILED, f"{host} is not a node of {conn.describe()}"
    held_by_person = slurm.kuae_state is not None and not is_kuae_reason(slurm.reason)
    if row.action == ActuationAction.RESUME:
        if slurm.kuae_state is None:
            return ActuationResult.SKIPPED, f"not drained in Slurm ({slurm.label})"
        if held_by_person:
            return ActuationResult.SKIPPED, (
                f"left alone: drained in Slurm by {slurm.reason_by or 'a person'}: {slurm.reason}"
            )
    elif held_by_person:
        return ActuationResult.SKIPPED, (
            f"already {slurm.label} in Slurm by {slurm.reason_by or 'a person'}: {slurm.reason}"
        )
    try:
        if row.action == ActuationAction.DRAIN:
            conn.drain(host, row.reason)
        else:
            conn.resume(host)
    except SchedulerUnavailable as exc:
        return ActuationResult.PENDING, str(exc)
    except SchedulerRefused as exc:
        return ActuationResult.FAILED, str(exc)
    return ActuationResult.DONE, ""


def _record(row: Actuation, result: str, error: str) -> None:
    now = timezone.now()
    if result == HELD:
        Actuation.objects.filter(pk=row.pk).update(
            next_try_at=now + dt.timedelta(seconds=30), error=error[:500]
        )
        return
    if result == ActuationResult.PENDING:
        attempts = row.attempts + 1
        delay = min(BACKOFF_MAX_S, 5 * 2 ** min(attempts - 1, 10))
        Actuation.objects.filter(pk=row.pk).update(
            attempts=attempts, next_try_at=now + dt.timedelta(seconds=delay), error=error[:500]
        )
        return
    Actuation.objects.filter(pk=row.pk).update(
        result=result,
        error=error[:500],
        attempts=row.attempts + (result != ActuationResult.SKIPPED),
        sent_at=now if result in (ActuationResult.DONE, ActuationResult.FAILED) else None,
    )
