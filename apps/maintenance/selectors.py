"""Reads of the maintenance app: window lists for the API and pages, and which nodes a
window in progress covers (the checks skip them)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db.models import Count, Q, QuerySet

from apps.fleet.models import Node
from apps.maintenance.choices import WindowStatus
from apps.maintenance.models import MaintenanceWindow, WindowNode

LIVE = (WindowStatus.SCHEDULED, WindowStatus.ACTIVE)


def window_list() -> QuerySet[MaintenanceWindow]:
    """Every window with its cluster, nodes and count of silenced alerts."""
    return (
        MaintenanceWindow.objects.select_related("cluster")
        .prefetch_related("nodes")
        .annotate(silenced_count=Count("silenced_alerts", distinct=True))
        .order_by("start", "id")
    )


def in_progress(at: dt.datetime) -> Q:
    """The condition of a window in progress at `at` (by its times: nothing waits for the
    beat task that applies it)."""
    return Q(start__lte=at, end__gt=at) & ~Q(status__in=(WindowStatus.CANCELLED,))


def nodes_in_maintenance(cluster_id: int, at: dt.datetime) -> set[str]:
    """Hostnames of the cluster's nodes that a window in progress at `at` covers."""
    return set(
        WindowNode.objects.filter(node__cluster_id=cluster_id)
        .filter(
            window__start__lte=at,
            window__end__gt=at,
        )
        .exclude(window__status=WindowStatus.CANCELLED)
        .values_list("node__hostname", flat=True)
    )


@dataclass
class Calendar:
    """The windows page: in progress, upcoming (soonest first), past (newest first)."""

    current: list[MaintenanceWindow] = field(default_factory=list)
    upcoming: list[MaintenanceWindow] = field(default_factory=list)
    past: list[MaintenanceWindow] = field(default_factory=list)


def calendar(*, now: dt.datetime, cluster: str = "", past_limit: int = 50) -> Calendar:
    """The windows of every cluster (or one) around `now`."""
    rows = window_list()
    if cluster:
        rows = rows.filter(cluster__name=cluster)
    out = Calendar()
    for window in rows.filter(end__gt=now).exclude(status=WindowStatus.CANCELLED):
        (out.current if window.start <= now else out.upcoming).append(window)
    past = rows.filter(Q(end__lte=now) | Q(status=WindowStatus.CANCELLED)).order_by("-end", "-id")
    out.past = list(past[:past_limit])
    return out


def windows_of_node(node: Node, *, now: dt.datetime) -> list[MaintenanceWindow]:
    """The node's windows in progress or upcoming, soonest first."""
    return list(
        MaintenanceWindow.objects.filter(nodes=node, end__gt=now)
        .exclude(status=WindowStatus.CANCELLED)
        .annotate(node_count=Count("nodes"))
        .order_by("start", "id")[:5]
    )


def windows_now(*, now: dt.datetime) -> list[MaintenanceWindow]:
    """Windows in progress across the fleet (the overview), with their node counts."""
    return list(
        MaintenanceWindow.objects.filter(in_progress(now))
        .select_related("cluster")
        .annotate(node_count=Count("nodes"))
        .order_by("end", "id")
    )


def window_detail(pk: int) -> MaintenanceWindow:
    """One window with its nodes and silenced alerts (DoesNotExist when unknown)."""
    return window_list().prefetch_related("silenced_alerts__node").get(pk=pk)
