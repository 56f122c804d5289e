"""Repairs on other apps' pages, lent to `common/panels.py` at start-up: the node page shows
the node's open repair (or the repair being opened for a drain a moment ago) and the
repeat-offender flag, the reliability page the repeat offenders (docs/repairs.md). The
fleet and reports apps know no repair; these panels only read."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils import timezone

from apps.common import panels
from apps.fleet.models import Cluster, Node
from apps.repairs.choices import IN_SERVICE, REPEAT_DAYS, REPEAT_REPAIRS
from apps.repairs.selectors import open_repair_of, repair_counts, repairs_opening, repeat_offenders


def node_repair(*, node: Node) -> dict[str, Any]:
    """The node's open repair; else, when it was drained or taken down since the last sync,
    the repair being opened; and, when it has been repaired REPEAT_REPAIRS times in
    REPEAT_DAYS days, the repeat-offender flag. A repair still open on a node put back in
    service is shown as closing (the next sync closes it)."""
    count = repair_counts([node.pk]).get(node.pk, 0)
    repair = open_repair_of(node)
    opening = None if repair is not None else next(iter(repairs_opening(node=node, limit=1)), None)
    return {
        "repair": repair,
        "closing": repair is not None and node.state in IN_SERVICE,
        "opening": opening,
        "sync_s": settings.KUAE_REPAIRS_SYNC_S,
        "node": node,
        "now": timezone.now(),
        "recent": count,
        "offender": count >= REPEAT_REPAIRS,
        "days": REPEAT_DAYS,
    }


def repeat_offender_nodes(*, cluster: Cluster) -> dict[str, Any]:
    """The cluster's nodes repaired REPEAT_REPAIRS times or more in REPEAT_DAYS days, with
    an RMA suggestion."""
    return {
        "offenders": repeat_offenders(cluster_id=cluster.pk),
        "days": REPEAT_DAYS,
        "threshold": REPEAT_REPAIRS,
    }


def panels_lend() -> None:
    """Lend the panels (from `RepairsConfig.ready()`)."""
    panels.lend(
        slot=panels.NODE, template="repairs/_node_repair.html", context=node_repair, order=20
    )
    panels.lend(
        slot=panels.RELIABILITY, template="repairs/_offenders.html", context=repeat_offender_nodes
    )
