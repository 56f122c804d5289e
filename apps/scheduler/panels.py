"""The scheduler on the node page (fleet), lent to `common/panels.py` at start-up: the
drains and resumes KUAE asked of Slurm for the node (docs/slurm.md, Actuation). The fleet
knows no scheduler; the panel only reads."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from apps.common import panels
from apps.fleet.choices import ActuationMode
from apps.fleet.models import Node
from apps.scheduler.selectors import node_actuations


def node_sent(*, node: Node) -> dict[str, Any] | None:
    """The node's actuations, newest first; None (no panel) when there are none and the
    cluster's actuation is off."""
    actuations = node_actuations(node=node)
    if not actuations and node.cluster.actuation == ActuationMode.OFF:
        return None
    return {"actuations": actuations, "node": node, "now": timezone.now()}


def panels_lend() -> None:
    """Lend the panels (from `SchedulerConfig.ready()`)."""
    panels.lend(
        slot=panels.NODE_BELOW, template="scheduler/_node_actuations.html", context=node_sent
    )
