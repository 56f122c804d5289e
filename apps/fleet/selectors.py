"""Reads of the fleet for pages and the API."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import Count, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from apps.fleet.choices import AVAILABLE_STATES, NodeState
from apps.fleet.models import (
    Cluster,
    Node,
    NodeRollup,
    NodeStateChange,
    TelemetryEvent,
)
from apps.fleet.readers import busy_node_ids
from apps.fleet.xids import (
    ACTION_LABELS,
    XidInfo,
    action_takes_out_of_service,
    xid154_action,
    xid_info,
)


def cluster_list() -> QuerySet[Cluster]:
    """Clusters by name with `node_count` and `gpu_count` (0, never null, without nodes)."""
    return Cluster.objects.annotate(
        node_count=Count("nodes"), gpu_count=Coalesce(Sum("nodes__gpu_count"), Value(0))
    ).order_by("name")


def cluster_names() -> list[str]:
    """Every cluster's name, in name order."""
    return list(Cluster.objects.order_by("name").values_list("name", flat=True))


def cluster_get(*, name: str | None = None) -> Cluster | None:
    """The cluster called `name`, or without a name the first by name; None if there is
    no such cluster."""
    clusters = Cluster.objects.order_by("name")
    return (clusters.filter(name=name) if name else clusters).first()


@dataclass(frozen=True)
class GpuAccount:
    """Where a cluster's GPUs are (docs/formulas.md, GPUs now): `allocated` to a running job, `idle`
    on a healthy or suspect node running none, `unavailable` on a drained, down or maintenance
    node; the three sum to `total`. A node out of service counts as unavailable even while
    a job still holds it (a hung job on a down node): its GPUs do no work."""

    total: int = 0
    allocated: int = 0
    idle: int = 0
    unavailable: int = 0
    by_state: dict[str, int] = field(default_factory=lambda: dict.fromkeys(NodeState.values, 0))


def gpu_account(nodes: Iterable[tuple[int, str, bool]]) -> GpuAccount:
    """Count GPUs from (gpu_count, state, runs a running job) per node."""
    by_state = dict.fromkeys(NodeState.values, 0)
    allocated = idle = 0
    for gpus, state, busy in nodes:
        by_state[state] = by_state.get(state, 0) + gpus
        if state in AVAILABLE_STATES:
            if busy:
                allocated += gpus
            else:
                idle += gpus
    total = sum(by_state.values())
    return GpuAccount(total, allocated, idle, total - allocated - idle, by_state)


def cluster_gpus(*, cluster: Cluster) -> GpuAccount:
    """The cluster's GPU accounting in two queries (its nodes, the nodes running a job)."""
    busy = busy_node_ids(cluster.pk)
    rows = Node.objects.filter(cluster=cluster).values_list("pk", "gpu_count", "state")
    return gpu_account((gpus, state, pk in busy) for pk, gpus, state in rows)


def node_list(
    *, cluster: str | None = None, state: str | None = None, rack: str | None = None
) -> QuerySet[Node]:
    """Nodes by hostname with their cluster joined."""
    qs = Node.objects.select_related("cluster").order_by("hostname")
    if cluster:
        qs = qs.filter(cluster__name=cluster)
    if state:
        qs = qs.filter(state=state)
    if rack:
        qs = qs.filter(rack=rack)
    return qs


def node_get(*, hostname: str) -> Node | None:
    """One node by hostname, or None."""
    return Node.objects.filter(hostname=hostname).first()


def node_detail(*, hostname: str) -> Node | None:
    """One node with its cluster and GPUs loaded."""
    return (
        Node.objects.select_related("cluster")
        .prefetch_related("gpus")
        .filter(hostname=hostname)
        .first()
    )


def node_state_history(*, node: Node, limit: int = 200) -> list[NodeStateChange]:
    """A node's state changes, newest first."""
    return list(NodeStateChange.objects.filter(node=node).order_by("-at", "-id")[:limit])


@dataclass(frozen=True)
class StateCount:
    """Nodes and GPUs in one state."""

    state: NodeState
    nodes: int
    gpus: int


def state_counts(*, cluster: Cluster) -> list[StateCount]:
    """Nodes and GPUs per state, every state listed (zeros included), in one query."""
    rows = {
        row["state"]: row
        for row in Node.objects.filter(cluster=cluster)
        .values("state")
        .annotate(nodes=Count("id"), gpus=Sum("gpu_count"))
    }
    return [
        StateCount(state, rows.get(state, {}).get("nodes", 0), rows.get(state, {}).get("gpus") or 0)
        for state in NodeState
    ]


def rack_list(*, cluster: str | None = None) -> list[str]:
    """Distinct racks, for the nodes page filter."""
    qs = Node.objects.all()
    if cluster:
        qs = qs.filter(cluster__name=cluster)
    return list(qs.order_by("rack").values_list("rack", flat=True).distinct())


def node_events(*, node: Node, limit: int = 50) -> list[TelemetryEvent]:
    """A node's XID/ECC/reset events, newest first."""
    return list(TelemetryEvent.objects.filter(node=node).order_by("-at", "-id")[:limit])


@dataclass(frozen=True)
class EventRow:
    """A node-page row: the event, and for an XID its entry in NVIDIA's catalogue (None for
    a code the catalogue does not know, or an event that is no XID)."""

    event: TelemetryEvent
    xid: XidInfo | None

    @property
    def unknown_xid(self) -> bool:
        """An XID whose code the catalogue does not know."""
        return self.event.kind == TelemetryEvent.Kind.XID and self.xid is None

    @property
    def action(self) -> str | None:
        """The immediate-action bucket: the catalogue's, or the one an XID 154 names."""
        if self.xid is None:
            return None
        if self.xid.code == 154:
            return xid154_action(self.event.message) or self.xid.action
        return self.xid.action

    @property
    def action_label(self) -> str:
        """The recommended action in words ('' for an event that is no known XID)."""
        action = self.action
        return "" if action is None else ACTION_LABELS.get(action, action)

    @property
    def out_of_service(self) -> bool:
        """Whether that action needs the GPU or the node out of service."""
        return self.action is not None and action_takes_out_of_service(self.action)


def node_event_rows(*, node: Node, limit: int = 50) -> list[EventRow]:
    """A node's events, newest first, each XID with its mnemonic and recommended action."""
    return [
        EventRow(e, xid_info(int(e.value)) if e.kind == TelemetryEvent.Kind.XID else None)
        for e in node_events(node=node, limit=limit)
    ]


def node_rollups(*, node: Node, since: dt.datetime) -> list[NodeRollup]:
    """A node's 5-minute rollups since `since`, oldest first."""
    return list(NodeRollup.objects.filter(node=node, bucket__gte=since).order_by("bucket"))
