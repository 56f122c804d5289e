"""`fabric`: the RDMA fabric's NIC ports (docs/checks.md, `fabric`).

Each run judges every port's latest reading against the reading the previous run judged
(kept on the port, written with the run's findings; a port that left ACTIVE is kept as
"was ACTIVE" until it is back), counts the port's warnings within the hour from its stored
result, and names the switch at the cable's far end so a bad leaf is one incident. A
cluster whose ports never reported shows the fabric as "Not monitored" on its health page
— never a pass.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import partial

from django.utils.translation import gettext_lazy as _

from apps.common.words import Words
from apps.fleet.models import Cluster
from apps.health import inputs
from apps.health.checks.base import CheckSpec, Context
from apps.health.detectors import FabricPort, Finding
from apps.health.detectors.fabric import PortHistory, PortReading, fabric, port_target
from apps.health.detectors.findings import PORT
from apps.health.thresholds import Shared, threshold
from apps.incidents.choices import Category
from apps.telemetry.models import Port
from apps.telemetry.monitored import Needed
from apps.telemetry.ports import COUNTERS
from apps.telemetry.services import Judged, ports_judged

NOT_MONITORED = _("no NIC port of this cluster has reported")
# Read from a port's hw_counters/, which node_exporter does not publish.
HW_COUNTERS = _(
    "node_exporter publishes no hw_counters (not reported by node_exporter); "
    "kuae-agent run --fabric reads them"
)
KIND, LABEL = "fabric", _("Fabric (NIC ports)")


@dataclass(frozen=True)
class FabricLimits(Shared):
    """The fabric check's thresholds (docs/checks.md, Thresholds), besides those every check
    shares."""

    fabric_flaps_per_min: float = threshold(
        5.0, _("Flapping link: link error recoveries a minute over"), "/min", check=KIND, hi=10**6
    )
    fabric_symbol_errors_per_s: float = threshold(
        10.0, _("Symbol errors a second over"), "/s", check=KIND, hi=10**9
    )
    fabric_rcv_errors_per_s: float = threshold(
        10.0, _("Receive errors a second over"), "/s", check=KIND, hi=10**9
    )
    fabric_xmit_discards_per_s: float = threshold(
        100.0, _("Transmit discards a second over"), "/s", check=KIND, hi=10**9
    )
    fabric_ack_timeouts_per_s: float = threshold(
        1.0, _("Local ACK timeouts a second over"), "/s", check=KIND, hi=10**9
    )
    fabric_rnr_naks_per_s: float = threshold(
        1.0, _("RNR NAK retries a second over"), "/s", check=KIND, hi=10**9
    )
    fabric_warns_to_fail: int = threshold(
        3,
        _("A port that warned this many times in an hour fails"),
        _("warns"),
        check=KIND,
        lo=1,
        hi=1_000,
    )


def _histories(ctx: Context, ports: list[FabricPort]) -> list[PortHistory]:
    """What the detector judges of each port that has a reading."""
    missing = ctx.streaks("missing_runs")
    # Nodes whose ports sent a reading since the previous run: their source is alive, so a
    # port of theirs that sent none is missing (a GPU that stops while its node's others
    # report is judged the same way).
    reporting = {p.node for p in ports if p.ts is not None and p.ts != p.judged_ts}
    warned = inputs.result_times(ctx.cluster, ctx.kind, "warned_at")
    nodes_of: dict[str, set[str]] = defaultdict(set)
    for p in ports:
        if p.switch:
            nodes_of[p.switch].add(p.node)
    out = []
    for p in ports:
        if p.ts is None:
            continue
        target = port_target(p.node, p.port)
        stale = p.judged_ts == p.ts and p.node in reporting
        previous = (
            PortReading(p.judged_ts, p.judged_state or None, p.judged_counters)
            if p.judged_ts is not None
            else None
        )
        out.append(
            PortHistory(
                node=p.node,
                port=p.port,
                latest=PortReading(p.ts, p.state or None, p.counters),
                previous=previous,
                warned_at=tuple(warned.get(target, ())),
                missing_runs=missing.get(target, 0) + 1 if stale else 0,
                switch=p.switch,
                switch_nodes=len(nodes_of[p.switch]) if p.switch else 0,
            )
        )
    return out


def fabric_ports(cluster: Cluster) -> list[FabricPort]:
    """Every NIC port of the cluster with its latest reading, the reading the fabric check
    judged last, its node's state, and the switch at its cable's far
    end (the node's own switch when the port names none) — one query."""
    rows = Port.objects.filter(node__cluster=cluster).values_list(
        "pk",
        "node__hostname",
        "node__state",
        "node__switch",
        "device",
        "port",
        "switch",
        "ts",
        "state",
        "counters",
        "judged_ts",
        "judged_state",
        "judged_counters",
    )
    return [
        FabricPort(
            pk=pk,
            node=host,
            node_state=node_state,
            port=f"{device}/{port}",
            switch=switch or node_switch,
            ts=ts,
            state=state,
            counters=counters or {},
            judged_ts=judged_ts,
            judged_state=judged_state,
            judged_counters=judged_counters or {},
        )
        for (
            pk,
            host,
            node_state,
            node_switch,
            device,
            port,
            switch,
            ts,
            state,
            counters,
            judged_ts,
            judged_state,
            judged_counters,
        ) in rows
    ]


def run(ctx: Context) -> list[Finding]:
    """Every port's latest reading against the one judged last; those readings become the
    judged ones when the findings are applied."""
    ports = fabric_ports(ctx.cluster)
    in_service = {p.node for p in ports if p.node_state in inputs.IN_SERVICE}
    findings = fabric(_histories(ctx, ports), limits=ctx.limits, in_service=in_service, now=ctx.now)
    # A port that left ACTIVE stays judged as "was ACTIVE" until it is back: it keeps
    # failing while it is down on a node in service, not just on the run that saw it go.
    judged = [
        Judged(p.pk, p.ts, "ACTIVE" if p.judged_state == "ACTIVE" else p.state, p.counters)
        for p in ports
        if p.ts is not None and p.ts != p.judged_ts
    ]
    if judged:
        ctx.writes.append(partial(ports_judged, judged))
    return findings


def not_monitored(cluster: Cluster) -> Words | None:
    """Why the cluster's fabric is not judged: none of its NIC ports ever reported (one
    query); None once one has."""
    return None if Port.objects.filter(node__cluster=cluster).exists() else NOT_MONITORED


SPEC = CheckSpec(
    kind=KIND,
    limits=FabricLimits,
    label=LABEL,
    order=70,
    target=PORT,
    categories=(Category.NIC, Category.NETWORK_SWITCH_CABLE),
    run=run,
    needs=(
        Needed(_("RNR NAK retries"), ("rnr_nak_retry_err",), "fabric", LABEL, HW_COUNTERS, "port"),
        Needed(
            _("Local ACK timeouts"),
            ("local_ack_timeout_err",),
            "fabric",
            LABEL,
            HW_COUNTERS,
            "port",
        ),
        Needed(
            _("Link down counter"),
            ("link_downed",),
            "fabric",
            LABEL,
            _("its source sends no link counters"),
            "port",
        ),
    ),
    # The ports' names it reads, from node_exporter's infiniband series (KUAE's names, as
    # apps.telemetry.infiniband maps them; hw_counters' two are not published there).
    pulls=frozenset({"state", "phys_state", "rate_gbps", *COUNTERS}),
    events={"link_downed": _("Port link went down"), "port_reset": _("Port counters reset")},
    event_target=PORT,
    not_monitored=not_monitored,
)
