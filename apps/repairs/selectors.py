"""Reads of the repairs app: lists for the API and the page, a node's open repair, repeat
offenders."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db.models import Count, Prefetch, QuerySet
from django.utils import timezone

from apps.fleet.models import Node
from apps.incidents.models import Incident
from apps.repairs.choices import REPEAT_DAYS, REPEAT_REPAIRS, RepairStatus
from apps.repairs.models import Repair


def repair_list() -> QuerySet[Repair]:
    """Every repair with its node, cluster and incidents, newest first."""
    return (
        Repair.objects.select_related("node", "node__cluster")
        .prefetch_related(
            Prefetch(
                "incidents", queryset=Incident.objects.only("id", "title", "severity", "status")
            )
        )
        .order_by("-opened_at", "-id")
    )


def open_repair_of(node: Node) -> Repair | None:
    """The node's repair not yet closed, if any."""
    return repair_list().filter(node=node).exclude(status=RepairStatus.CLOSED).first()


def repair_counts(node_ids: list[int], *, now: dt.datetime | None = None) -> dict[int, int]:
    """node id → repairs opened in the last REPEAT_DAYS days."""
    since = (now or timezone.now()) - dt.timedelta(days=REPEAT_DAYS)
    rows = (
        Repair.objects.filter(node_id__in=node_ids, opened_at__gte=since)
        .values("node_id")
        .annotate(n=Count("id"))
    )
    return {r["node_id"]: r["n"] for r in rows}


@dataclass(frozen=True)
class Offender:
    """A node with at least REPEAT_REPAIRS repairs in REPEAT_DAYS days."""

    hostname: str
    cluster: str
    state: str
    repairs: int


def repeat_offenders(
    *, cluster_id: int | None = None, now: dt.datetime | None = None
) -> list[Offender]:
    """Nodes repaired REPEAT_REPAIRS times or more in the last REPEAT_DAYS days, most
    repaired first."""
    since = (now or timezone.now()) - dt.timedelta(days=REPEAT_DAYS)
    rows = Repair.objects.filter(opened_at__gte=since)
    if cluster_id is not None:
        rows = rows.filter(node__cluster_id=cluster_id)
    grouped = (
        rows.values("node__hostname", "node__cluster__name", "node__state")
        .annotate(n=Count("id"))
        .filter(n__gte=REPEAT_REPAIRS)
        .order_by("-n", "node__hostname")[:200]
    )
    return [
        Offender(r["node__hostname"], r["node__cluster__name"], r["node__state"], r["n"])
        for r in grouped
    ]


@dataclass
class Board:
    """The repairs page: open, in burn-in, recently closed."""

    open: list[Repair] = field(default_factory=list)
    burn_in: list[Repair] = field(default_factory=list)
    closed: list[Repair] = field(default_factory=list)


def board(*, cluster: str = "", closed_days: int = 7, limit: int = 200) -> Board:
    """The repairs page's three lists (of every cluster, or one)."""
    rows = repair_list()
    if cluster:
        rows = rows.filter(node__cluster__name=cluster)
    since = timezone.now() - dt.timedelta(days=closed_days)
    out = Board()
    out.open = list(rows.filter(status=RepairStatus.OPEN).order_by("opened_at", "id")[:limit])
    out.burn_in = list(
        rows.filter(status=RepairStatus.BURN_IN).order_by("return_requested_at", "id")[:limit]
    )
    out.closed = list(
        rows.filter(status=RepairStatus.CLOSED, closed_at__gte=since).order_by("-closed_at")[:limit]
    )
    return out
