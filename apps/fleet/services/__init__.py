"""Every write to the fleet: nodes and their states (`nodes`), telemetry intake
(`telemetry`), kernel-log events (`events`), pull-mode scraping (`scrape`), retention
(`retention`), where agent tokens may write (`agent_scopes`)."""

from apps.fleet.services.agent_scopes import agent_scope_set
from apps.fleet.services.clusters import cluster_automation_set
from apps.fleet.services.events import EventIngestResult, events_ingest
from apps.fleet.services.nodes import (
    NodeSpec,
    cluster_create,
    node_heartbeat,
    node_register,
    node_set_state,
    nodes_register,
    nodes_seen,
    nodes_topology_set,
    nodes_touch_bulk,
)
from apps.fleet.services.retention import rollups_prune
from apps.fleet.services.scrape import scrape_nodes
from apps.fleet.services.telemetry import telemetry_ingest

__all__ = [
    "agent_scope_set",
    "EventIngestResult",
    "events_ingest",
    "NodeSpec",
    "cluster_automation_set",
    "cluster_create",
    "node_heartbeat",
    "node_register",
    "node_set_state",
    "nodes_register",
    "nodes_topology_set",
    "nodes_seen",
    "nodes_touch_bulk",
    "rollups_prune",
    "scrape_nodes",
    "telemetry_ingest",
]
