"""Reads of the scheduler app for pages and the API."""

from __future__ import annotations

from django.db.models import QuerySet

from apps.fleet.models import Cluster, Node
from apps.scheduler.models import Actuation, SchedulerNode, SchedulerSync


def actuation_list() -> QuerySet[Actuation]:
    """Every actuation, newest first, with its node."""
    return Actuation.objects.select_related("node").order_by("-requested_at", "-id")


def node_actuations(*, node: Node, limit: int = 20) -> list[Actuation]:
    """The drains and resumes KUAE asked of the scheduler for a node, newest first."""
    return list(Actuation.objects.filter(node=node).order_by("-requested_at", "-id")[:limit])


def node_in_scheduler(*, node: Node) -> SchedulerNode | None:
    """The node as its scheduler saw it at the last sync, or None before any sync saw it."""
    return SchedulerNode.objects.filter(node=node).first()


def cluster_sync_status(*, cluster: Cluster) -> SchedulerSync | None:
    """The cluster's last scheduler sync, or None before the first."""
    return SchedulerSync.objects.filter(cluster=cluster).first()
