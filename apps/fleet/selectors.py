"""Reads of the fleet for pages and the API."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db.models import Count, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from apps.fleet.choices import AVAILABLE_STATES, NodeState
from apps.fleet.models import GPU, Cluster, Node, NodeStateChange
from apps.fleet.readers import busy_node_ids


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


# How long a process remembers the (vendor, model) names a cluster's GPUs are stored under:
# reading them walks every GPU (102,400 on the largest fleet, a fifth of a page's time), and
# a cluster gains a GPU model about as often as it gains a rack (docs/pages.md, Vendors and
# models).
GPU_KINDS_TTL_S = 300


def cluster_gpu_kinds(cluster: Cluster) -> list[tuple[str, str]]:
    """The distinct (vendor, model) names the cluster's GPUs are stored under, sorted;
    remembered `GPU_KINDS_TTL_S` in the process's cache (one query when not)."""
    key = f"cluster-gpu-kinds:{cluster.pk}"
    kinds: list[tuple[str, str]] | None = cache.get(key)
    if kinds is None:
        # order_by(): the GPUs' own ordering would make every GPU distinct
        rows = GPU.objects.filter(node__cluster=cluster).values_list("vendor", "model")
        kinds = sorted(set(rows.order_by().distinct()))
        if kinds:  # a cluster with no GPUs yet is read again: they may come
            cache.set(key, kinds, GPU_KINDS_TTL_S)
    return kinds


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
    rows: dict[str, tuple[int, int]] = {
        state: (nodes, gpus or 0)
        for state, nodes, gpus in Node.objects.filter(cluster=cluster)
        .values("state")
        .annotate(node_n=Count("id"), gpu_n=Sum("gpu_count"))
        .values_list("state", "node_n", "gpu_n")
    }
    return [StateCount(state, *rows.get(state, (0, 0))) for state in NodeState]


def rack_list(*, cluster: str | None = None) -> list[str]:
    """Distinct racks, for the nodes page filter."""
    qs = Node.objects.all()
    if cluster:
        qs = qs.filter(cluster__name=cluster)
    return list(qs.order_by("rack").values_list("rack", flat=True).distinct())
