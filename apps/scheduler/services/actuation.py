"""The actuation outbox (docs/slurm.md, Actuation): a drain or resume request written with the
state change it follows, in its transaction. The fleet knows no scheduler: `actuation_request`
is lent to its `node_set_state` at start-up (`fleet/transitions.py`, from
`SchedulerConfig.ready()`)."""

from __future__ import annotations

import re

from apps.fleet.choices import OUT_OF_SERVICE, ActuationMode, NodeState, StateSource
from apps.fleet.models import Cluster, Node, NodeStateChange
from apps.scheduler.choices import ActuationAction, ActuationResult
from apps.scheduler.models import Actuation

REASON_CHARS = 120  # Slurm shows reasons in one column of `sinfo -R`: keep them short
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
