"""Every write to the fleet: nodes and their states (`nodes`), clusters' automation
(`clusters`), where agent tokens may write (`agent_scopes`). What nodes report is the
telemetry app's (`apps.telemetry.services`)."""

from apps.fleet.services.agent_scopes import agent_scope_set
from apps.fleet.services.clusters import cluster_automation_set
from apps.fleet.services.nodes import (
    NodeSpec,
    cluster_create,
    node_heartbeat,
    node_register,
    node_set_state,
    nodes_claim,
    nodes_register,
    nodes_seen,
    nodes_topology_set,
    nodes_touch_bulk,
)

__all__ = [
    "agent_scope_set",
    "NodeSpec",
    "cluster_automation_set",
    "cluster_create",
    "node_heartbeat",
    "node_register",
    "node_set_state",
    "nodes_claim",
    "nodes_register",
    "nodes_topology_set",
    "nodes_seen",
    "nodes_touch_bulk",
]
