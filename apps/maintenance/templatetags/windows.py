"""Maintenance windows on other apps' pages: the node page and the overview load these tags,
so those apps need not know about windows (docs/architecture.md)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.maintenance.selectors import windows_now, windows_of_node

register = template.Library()


@register.inclusion_tag("maintenance/_node_windows.html")
def node_windows(node: Node) -> dict[str, Any]:
    """The node's window in progress and its upcoming ones."""
    now = timezone.now()
    return {"windows": windows_of_node(node, now=now), "now": now, "node": node}


@register.inclusion_tag("maintenance/_overview_windows.html")
def windows_in_progress(cluster: Cluster | None = None) -> dict[str, Any]:
    """The windows in progress (of `cluster`, else everywhere), for the overview."""
    now = timezone.now()
    rows = windows_now(now=now)
    if cluster is not None:
        rows = [w for w in rows if w.cluster_id == cluster.pk]
    return {"windows": rows, "now": now}
