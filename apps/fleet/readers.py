"""Reads the fleet's answers need from the apps above it (docs/incidents.md, A job's condition).

The fleet imports no other app (docs/architecture.md, Readers lent downwards), yet `GET
clusters/{name}/` counts the GPUs of nodes that run a job and `GET nodes/{hostname}/` lists
the open incidents naming the node. The jobs and incidents apps lend those two readers here
from their `AppConfig.ready()`; the fleet alone knows of no job and no incident, and a
reader nobody lent fails loudly (apps/common/lending.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from apps.common.lending import Registry


@dataclass(frozen=True)
class IncidentRef:
    """An open incident as a node's or a job's answer lists it: `{id, category, severity,
    title}`."""

    id: int
    category: str
    severity: str
    title: str


BusyNodes = Callable[[int], set[int]]
NodeIncidents = Callable[[Sequence[int]], dict[int, list[IncidentRef]]]

_lent = Registry(
    "apps.fleet.readers",
    lenders={"busy_nodes": "the jobs app", "node_incidents": "the incidents app"},
)


def lend(
    *, busy_nodes: BusyNodes | None = None, node_incidents: NodeIncidents | None = None
) -> None:
    """Register the reader of a cluster's busy node ids (jobs) or of nodes' open incidents
    (incidents)."""
    if busy_nodes is not None:
        _lent["busy_nodes"] = busy_nodes
    if node_incidents is not None:
        _lent["node_incidents"] = node_incidents


def busy_node_ids(cluster_id: int) -> set[int]:
    """Ids of the cluster's nodes that run a `running` job."""
    return _lent["busy_nodes"](cluster_id)


def open_incidents_of(node_ids: Sequence[int]) -> dict[int, list[IncidentRef]]:
    """node id → the open incidents naming it, most severe first."""
    return _lent["node_incidents"](node_ids)
