"""Repairs on other apps' pages: the node page and the reliability page load these tags, so
those apps need not know about repairs (docs/architecture.md)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.repairs.choices import REPEAT_DAYS, REPEAT_REPAIRS
from apps.repairs.selectors import open_repair_of, repair_counts, repeat_offenders
from apps.repairs.services import repairs_sync

register = template.Library()


@register.inclusion_tag("repairs/_node_repair.html")
def node_repair(node: Node) -> dict[str, Any]:
    """The node's open repair (a drain a moment ago has one already) and, when it has been
    repaired REPEAT_REPAIRS times in REPEAT_DAYS days, the repeat-offender flag."""
    repairs_sync()
    count = repair_counts([node.pk]).get(node.pk, 0)
    return {
        "repair": open_repair_of(node),
        "node": node,
        "now": timezone.now(),
        "recent": count,
        "offender": count >= REPEAT_REPAIRS,
        "days": REPEAT_DAYS,
    }


@register.inclusion_tag("repairs/_offenders.html")
def repeat_offender_nodes(cluster: Cluster | None = None) -> dict[str, Any]:
    """Nodes repaired REPEAT_REPAIRS times or more in REPEAT_DAYS days, with an RMA
    suggestion (the reliability page)."""
    return {
        "offenders": repeat_offenders(cluster_id=cluster.pk if cluster else None),
        "days": REPEAT_DAYS,
        "threshold": REPEAT_REPAIRS,
    }
