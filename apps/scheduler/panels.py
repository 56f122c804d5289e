"""The scheduler on the node page (fleet), lent to `common/panels.py` at start-up: the node's
state and reason in Slurm among its facts (docs/slurm.md, The live sync), and the drains and
resumes KUAE asked of Slurm for it (docs/slurm.md, Actuation). The fleet knows no scheduler;
the panels only read."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from apps.common import panels
from apps.fleet.choices import ActuationMode
from apps.fleet.models import Node
from apps.scheduler.selectors import node_actuations, node_in_scheduler


def node_in_slurm(*, node: Node) -> dict[str, Any] | None:
    """Slurm's state and reason of the node at the last sync; None (no fact) when the
    cluster names no Slurm and no sync ever saw the node."""
    sched = node_in_scheduler(node=node)
    if not node.cluster.slurm_kind and (sched is None or sched.synced_at is None):
        return None
    return {"sched": sched, "now": timezone.now()}


def node_sent(*, node: Node) -> dict[str, Any] | None:
    """The node's actuations, newest first; None (no panel) when there are none and the
    cluster's actuation is off."""
    actuations = node_actuations(node=node)
    if not actuations and node.cluster.actuation == ActuationMode.OFF:
        return None
    return {"actuations": actuations, "node": node, "now": timezone.now()}


def panels_lend() -> None:
    """Lend the panels (from `SchedulerConfig.ready()`)."""
    panels.lend(slot=panels.NODE_FACTS, template="scheduler/_node_fact.html", context=node_in_slurm)
    panels.lend(
        slot=panels.NODE_BELOW, template="scheduler/_node_actuations.html", context=node_sent
    )
