"""`fabric`: the RDMA fabric's NIC ports (docs/checks.md, `fabric`) — not run yet.

Declared in full (target, categories, thresholds in `Limits`, the port event kinds, the
node_exporter series it reads) and its pure detector written and tested
(`detectors/fabric.py`). Ports and their readings are now kept (the telemetry intake, the
agent's `--fabric`, node_exporter's text), but the check does not load them yet: it is not
scheduled, and every cluster's health page shows the fabric as "Not monitored", saying
whether its ports report — never a pass.
"""

from __future__ import annotations

from apps.fleet.models import Cluster
from apps.health.checks.base import CheckSpec, Context, Target
from apps.health.detectors import Finding
from apps.health.detectors.fabric import PortHistory, fabric
from apps.incidents.choices import Category
from apps.telemetry.models import Port

NOT_MONITORED = "no NIC port of this cluster has reported"
NOT_JUDGED = (
    "{ports} NIC ports report (see each node's page), but the fabric check does not judge them yet"
)


def run(ctx: Context) -> list[Finding]:
    """Every port's two latest readings, judged; no port is known yet, so none is judged."""
    ports: list[PortHistory] = []
    in_service: set[str] = set()
    return fabric(ports, limits=ctx.limits, in_service=in_service)


def not_monitored(cluster: Cluster) -> str | None:
    """Why the cluster's fabric is not judged: no port reports, or the check does not run
    yet (one query)."""
    ports = Port.objects.filter(node__cluster=cluster).count()
    return NOT_JUDGED.format(ports=f"{ports:,}") if ports else NOT_MONITORED


SPEC = CheckSpec(
    kind="fabric",
    label="Fabric (NIC ports)",
    target=Target.PORT,
    categories=(Category.NIC, Category.NETWORK_SWITCH_CABLE),
    run=run,
    # The ports' names it reads, from node_exporter's infiniband series (KUAE's names, as
    # apps.telemetry.infiniband maps them; hw_counters' two are not published there).
    pulls=frozenset(
        {
            "state",
            "phys_state",
            "rate_gbps",
            "link_downed",
            "link_error_recovery",
            "symbol_error",
            "port_rcv_errors",
            "port_xmit_discards",
            "local_link_integrity_errors",
            "excessive_buffer_overrun_errors",
            "port_rcv_remote_physical_errors",
            "port_xmit_wait",
            "rnr_nak_retry_err",
            "local_ack_timeout_err",
        }
    ),
    events={"link_downed": "Port link went down", "port_reset": "Port counters reset"},
    event_target=Target.PORT,
    not_monitored=not_monitored,
    scheduled=False,
)
