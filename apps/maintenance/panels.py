"""Maintenance windows on other apps' pages, lent to `common/panels.py` at start-up: the
node page shows the node's window in progress and its booked ones, the overview the windows
in progress (docs/maintenance.md). The fleet and reports apps know no window."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from apps.common import panels
from apps.fleet.models import Cluster, Node
from apps.maintenance.selectors import windows_now, windows_of_node


def node_windows(*, node: Node) -> dict[str, Any]:
    """The node's window in progress and its upcoming ones."""
    now = timezone.now()
    return {"windows": windows_of_node(node, now=now), "now": now, "node": node}


def windows_in_progress(*, cluster: Cluster) -> dict[str, Any]:
    """The cluster's windows in progress, for the overview."""
    now = timezone.now()
    return {"windows": [w for w in windows_now(now=now) if w.cluster_id == cluster.pk], "now": now}


def panels_lend() -> None:
    """Lend the panels (from `MaintenanceConfig.ready()`)."""
    panels.lend(
        slot=panels.NODE, template="maintenance/_node_windows.html", context=node_windows, order=10
    )
    panels.lend(
        slot=panels.OVERVIEW,
        template="maintenance/_overview_windows.html",
        context=windows_in_progress,
    )
