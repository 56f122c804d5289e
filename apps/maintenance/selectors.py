"""Reads of the maintenance app: window lists for the API and pages, and which nodes a
window in progress covers (the checks skip them)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db.models import Count, Q, QuerySet

from apps.fleet.models import Node
from apps.incidents.choices import Category
from apps.incidents.models import Incident
from apps.jobs.choices import JobStatus
from apps.jobs.models import Job
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
    past_total: int = 0  # all past and cancelled windows; `past` holds the newest of them


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
    out.past_total = past.count() if len(out.past) == past_limit else len(out.past)
    return out


def planned_without_window(*, cluster: str = "") -> int:
    """Planned-maintenance incidents that no window opened (filed as planned by hand, or
    made by the simulator): the incident history holds them, the window list cannot."""
    rows = Incident.objects.filter(planned=True, category=Category.HOST_MAINTENANCE).exclude(
        details__has_key="maintenance_window"
    )
    if cluster:
        rows = rows.filter(cluster__name=cluster)
    return rows.count()


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


@dataclass
class TouchedJob:
    """A running job that a window being booked would stop: the job, which of its nodes the
    window holds, and how many of its GPUs are on them."""

    job: Job
    hostnames: list[str]
    gpus: int


def jobs_touched(nodes: list[Node]) -> list[TouchedJob]:
    """The jobs running now on any of `nodes`, largest first, each with the nodes and GPUs
    of it the window would take (docs/maintenance.md, Booking a window)."""
    ids = {n.pk: n for n in nodes}
    jobs = (
        Job.objects.filter(status=JobStatus.RUNNING, nodes__in=list(ids))
        .distinct()
        .prefetch_related("nodes")
        .order_by("-gpu_count", "pk")
    )
    out = []
    for job in jobs:
        on = sorted((n for n in job.nodes.all() if n.pk in ids), key=lambda n: n.hostname)
        gpus = min(sum(n.gpu_count for n in on), job.gpu_count)
        out.append(TouchedJob(job=job, hostnames=[n.hostname for n in on], gpus=gpus))
    return out


def touched_key(touched: list[TouchedJob]) -> str:
    """What the operator confirmed: the ids of the jobs they were told about."""
    return ",".join(str(t.job.pk) for t in sorted(touched, key=lambda t: t.job.pk))
