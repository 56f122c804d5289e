"""`fabric`: the RDMA fabric's NIC ports (docs/checks.md, `fabric`) — a skeleton.

Declared in full (target, categories, thresholds in `Limits`, the port event kinds, the
node_exporter series it will read) and its pure detector written and tested
(`detectors/fabric.py`); what it cannot do yet is load ports: KUAE keeps no NIC port
inventory or port telemetry so far. Until it does, the check is not scheduled and every
cluster's health page shows the fabric as "Not monitored" — never a pass.
"""

from __future__ import annotations

from apps.fleet.models import Cluster
from apps.health.checks.base import CheckSpec, Context, Target
from apps.health.detectors import Finding
from apps.health.detectors.fabric import PortHistory, fabric
from apps.incidents.choices import Category

NOT_MONITORED = "no NIC port reports to KUAE yet: port telemetry is still to come"


def run(ctx: Context) -> list[Finding]:
    """Every port's two latest readings, judged; no port is known yet, so none is judged."""
    ports: list[PortHistory] = []
    in_service: set[str] = set()
    return fabric(ports, limits=ctx.limits, in_service=in_service)


def not_monitored(cluster: Cluster) -> str | None:
    """Why the cluster's fabric is not judged: it reports no ports (none can yet)."""
    return NOT_MONITORED


SPEC = CheckSpec(
    kind="fabric",
    label="Fabric (NIC ports)",
    target=Target.PORT,
    categories=(Category.NIC, Category.NETWORK_SWITCH_CABLE),
    run=run,
    # node_exporter's infiniband collector, as the Prometheus intake will map it.
    pulls=frozenset(
        {
            "port_state",
            "link_downed",
            "link_error_recovery",
            "symbol_error",
            "port_rcv_errors",
            "port_xmit_discards",
            "local_ack_timeout_err",
        }
    ),
    events={"link_downed": "Port link went down", "port_reset": "Port counters reset"},
    event_target=Target.PORT,
    not_monitored=not_monitored,
    scheduled=False,
)
