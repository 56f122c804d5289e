"""`heartbeat`: a node nothing has been heard from (docs/checks.md, `heartbeat`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from apps.fleet.choices import NodeState
from apps.health.blast import Place, components
from apps.health.detectors.findings import (
    Finding,
    Outcome,
    cluster_target,
    failed,
    node_target,
    passed,
)
from apps.incidents.choices import Category, Severity

if TYPE_CHECKING:  # the check's thresholds, declared by its plug-in
    from apps.health.checks.heartbeat import HeartbeatLimits

KIND = "heartbeat"
SKIPPED = frozenset({NodeState.DRAINED, NodeState.MAINTENANCE})
NODE_SILENT = Outcome(
    Category.NODE_UNREACHABLE, Severity.SEV2, interrupts_job=True, node_state=NodeState.DOWN
)
PATH_DOWN = Outcome(Category.NODE_UNREACHABLE, Severity.SEV2)


@dataclass(frozen=True)
class NodeSeen:
    """A node's state and the last time anything arrived from it (server time)."""

    hostname: str
    state: str
    last_seen: dt.datetime | None


def heartbeat(
    nodes: Sequence[NodeSeen],
    *,
    now: dt.datetime,
    limits: HeartbeatLimits,
    cluster: str,
    places: Mapping[str, Place] | None = None,
) -> list[Finding]:
    """Nodes silent for longer than the limit fail (node `down`); drained, maintenance and
    never-seen nodes are skipped, as are down nodes still silent. More than the cluster
    share silent at once is the monitoring path: one cluster finding, no node changes —
    except that silent nodes a failing switch, PDU or NVLink domain explains (`places`,
    docs/checks.md, Blast radius) are that component, not the path, while no more than half the
    nodes are silent."""
    considered = [n for n in nodes if n.state not in SKIPPED and n.last_seen is not None]
    out: list[Finding] = []
    silent: list[tuple[NodeSeen, float]] = []
    for node in considered:
        assert node.last_seen is not None
        age = (now - node.last_seen).total_seconds()
        if age <= limits.heartbeat_s:
            target = node_target(node.hostname)
            details: dict[str, object] = {"silent_s": round(age, 1)}
            out.append(
                passed(KIND, target, "heard from within the limit", details, node=node.hostname)
            )
        elif node.state != NodeState.DOWN:
            silent.append((node, age))
    share = limits.heartbeat_cluster_share * max(len(considered), 1)
    if len(silent) > 1 and len(silent) > share and _path_down(silent, considered, share, places):
        hosts = sorted(n.hostname for n, _ in silent)
        message = (
            f"{len(silent)} of {len(considered)} nodes silent at once: "
            "the monitoring path, not the nodes"
        )
        details = {"silent_nodes": hosts[:200], "silent_count": len(silent)}
        first = min(n.last_seen for n, _ in silent if n.last_seen)
        out.append(
            failed(
                KIND,
                cluster_target(cluster),
                message,
                details,
                outcome=PATH_DOWN,
                occurred_at=first,
            )
        )
        return out
    for node, age in silent:
        message = (
            f"no heartbeat, telemetry or metric for {age:.0f} s (limit {limits.heartbeat_s:.0f} s)"
        )
        evidence: dict[str, object] = {
            "silent_s": round(age, 1),
            "last_seen": node.last_seen.isoformat() if node.last_seen else None,
        }
        out.append(
            failed(
                KIND,
                node_target(node.hostname),
                message,
                evidence,
                outcome=NODE_SILENT,
                node=node.hostname,
                occurred_at=node.last_seen,
            )
        )
    return out


def _path_down(
    silent: Sequence[tuple[NodeSeen, float]],
    considered: Sequence[NodeSeen],
    share: float,
    places: Mapping[str, Place] | None,
) -> bool:
    """Whether more nodes than the share are silent once those a failing component explains
    are set aside (all of them count when more than half the nodes are silent)."""
    if not places or 2 * len(silent) > len(considered):
        return True
    failing = components([n.hostname for n, _ in silent], places)
    explained = {h for c in failing for h in c.nodes}
    left = len(silent) - len(explained)
    return left > 1 and left > share
