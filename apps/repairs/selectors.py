"""Reads of the repairs app: lists for the API and the page, a node's open repair, the
repairs being opened, repeat offenders. Reads only: a page read opens no repair
(docs/repairs.md)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db.models import Count, Exists, OuterRef, Prefetch, QuerySet
from django.utils import timezone

from apps.fleet.choices import OUT_OF_SERVICE
from apps.fleet.models import Node, NodeStateChange
from apps.incidents.models import Incident
from apps.repairs.choices import LIVE, REPEAT_DAYS, REPEAT_REPAIRS, RepairStatus
from apps.repairs.models import OVERLAP, Cursor, Repair, RepairChange


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


@dataclass(frozen=True)
class Opening:
    """A node drained or down whose repair is not opened yet: `change` is the drain or down
    the next sync (the beat's, every KUAE_REPAIRS_SYNC_S seconds) opens it for. The pages
    show it as a repair being opened, so that reading them need not write it."""

    node: Node
    change: NodeStateChange


def repairs_opening(
    *, cluster: str = "", node: Node | None = None, limit: int = 200
) -> list[Opening]:
    """Nodes drained or down now, with no repair open, that have a drain or down the sync
    has not taken yet (of every cluster, one, or one node), the longest waiting first. The
    sync reads past its cursor only (less a margin), so this does too: a few indexed rows."""
    cursor = Cursor.objects.filter(pk=1).values_list("last_change_id", flat=True).first() or 0
    taken = RepairChange.objects.filter(change=OuterRef("pk"))
    live = Repair.objects.filter(node=OuterRef("node_id"), status__in=LIVE)
    rows = (
        NodeStateChange.objects.filter(
            id__gt=max(0, cursor - OVERLAP),
            state__in=OUT_OF_SERVICE,
            node__state__in=OUT_OF_SERVICE,
        )
        .filter(~Exists(taken), ~Exists(live))
        .select_related("node", "node__cluster")
        .order_by("id")
    )
    if cluster:
        rows = rows.filter(node__cluster__name=cluster)
    if node is not None:
        rows = rows.filter(node=node)
    first: dict[int, Opening] = {}
    for change in rows[: limit * 4]:  # the first untaken change per node opens its repair
        first.setdefault(change.node_id, Opening(node=change.node, change=change))
    return list(first.values())[:limit]


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
    """The repairs page: being opened, open, in burn-in, recently closed."""

    opening: list[Opening] = field(default_factory=list)
    open: list[Repair] = field(default_factory=list)
    burn_in: list[Repair] = field(default_factory=list)
    closed: list[Repair] = field(default_factory=list)


def board(*, cluster: str = "", closed_days: int = 7, limit: int = 200) -> Board:
    """The repairs page's lists (of every cluster, or one)."""
    rows = repair_list()
    if cluster:
        rows = rows.filter(node__cluster__name=cluster)
    since = timezone.now() - dt.timedelta(days=closed_days)
    out = Board(opening=repairs_opening(cluster=cluster, limit=limit))
    out.open = list(rows.filter(status=RepairStatus.OPEN).order_by("opened_at", "id")[:limit])
    out.burn_in = list(
        rows.filter(status=RepairStatus.BURN_IN).order_by("return_requested_at", "id")[:limit]
    )
    out.closed = list(
        rows.filter(status=RepairStatus.CLOSED, closed_at__gte=since).order_by("-closed_at")[:limit]
    )
    return out
