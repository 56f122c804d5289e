"""`heartbeat`: a node silent past its limit is down; many at once is the monitoring path
(docs/checks.md, `heartbeat`)."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from apps.fleet.models import Cluster, Node
from apps.health import inputs
from apps.health.checks.base import CheckSpec, Context
from apps.health.checks.gpu_errors import SPEC as GPU_ERRORS
from apps.health.checks.thermal import SPEC as THERMAL
from apps.health.detectors import Finding, NodeSeen, heartbeat
from apps.health.detectors.findings import NODE
from apps.health.thresholds import Shared, threshold
from apps.incidents.choices import Category
from apps.telemetry.names import DCGM_FIELDS

KIND = "heartbeat"


@dataclass(frozen=True)
class HeartbeatLimits(Shared):
    """The heartbeat check's thresholds (docs/checks.md, Thresholds), besides those every check
    shares."""

    heartbeat_cluster_share: float = threshold(
        0.10,
        _("Monitoring path down when more nodes are silent than"),
        _("share"),
        check=KIND,
        hi=1,
        above_lo=True,
    )


def nodes_seen(cluster: Cluster) -> list[NodeSeen]:
    """Every node's state and latest sign of life (heartbeat, telemetry or metric)."""
    out = []
    for hostname, state, seen, beat in Node.objects.filter(cluster=cluster).values_list(
        "hostname", "state", "last_seen_at", "last_heartbeat_at"
    ):
        latest = max((t for t in (seen, beat) if t is not None), default=None)
        out.append(NodeSeen(hostname, state, latest))
    return out


def run(ctx: Context) -> list[Finding]:
    """The cluster's nodes as last seen, those under maintenance left out before detection:
    nor do they count towards the share of silent nodes that means the monitoring path is
    down."""
    quiet = ctx.in_maintenance
    nodes = [n for n in nodes_seen(ctx.cluster) if n.hostname not in quiet]
    return heartbeat(
        nodes,
        now=ctx.now,
        limits=ctx.limits,
        cluster=ctx.cluster.name,
        places=inputs.places(ctx.cluster),
    )


SPEC = CheckSpec(
    kind=KIND,
    limits=HeartbeatLimits,
    label=_("Heartbeat"),
    order=10,
    target=NODE,
    categories=(Category.NODE_UNREACHABLE,),
    run=run,
    # From a cluster's Prometheus the heartbeat reads every field no other check judges
    # (what the node and GPUs pages show), so the three telemetry runs of a minute read
    # each field once: at 100,000 GPUs a third of the series a run would read with all.
    pulls=frozenset(DCGM_FIELDS.values()) - GPU_ERRORS.pulls - THERMAL.pulls,
)
