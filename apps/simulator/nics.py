"""The demo's NIC ports: each node's RDMA ports (`mlx5_N`, port 1, 400 Gb/s, cabled to its
rack's leaf switch), written at setup and read again on every live tick through the
telemetry intake's port service, so the `fabric` check has something to judge
(docs/simulator.md, The demo).

Counters grow slowly and never go down; a port fault (`flap`, `linkdown`, picked as the
demo's other faults are) bumps one port's link error recoveries or takes its link DOWN.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Collection

from apps.fleet.choices import NodeState
from apps.fleet.models import Cluster, Node
from apps.telemetry.models import Port
from apps.telemetry.ports import COUNTERS, PortReading
from apps.telemetry.services import ports_ingest

PORTS_PER_NODE = 8  # one 400G rail per GPU, as an H100 node has
RATE_GBPS = 400.0
FLAP_RECOVERIES = 10  # link error recoveries a flapping port adds in one tick
# Per tick, the chance each slow counter grows by one (all far below the check's rates).
_NOISE = {
    "symbol_error": 0.02,
    "port_rcv_errors": 0.01,
    "port_xmit_discards": 0.02,
    "rnr_nak_retry_err": 0.01,
    "local_ack_timeout_err": 0.005,
}
_UP = ("ACTIVE", "LinkUp")
_DOWN = ("DOWN", "Polling")


def device(index: int) -> str:
    """The `index`th port's device name (`mlx5_0`, …)."""
    return f"mlx5_{index}"


def ports_setup(*, cluster: Cluster, now: dt.datetime, seed: int = 1) -> int:
    """Give every node of `cluster` its NIC ports: one ACTIVE reading each at `now` (a node
    that is down: when it went silent), through `ports_ingest`; returns the ports written."""
    rng = random.Random(seed * 13 + 5)
    readings = []
    rows = Node.objects.filter(cluster=cluster).order_by("hostname")
    for hostname, switch, state, changed in rows.values_list(
        "hostname", "switch", "state", "state_changed_at"
    ):
        down = state == NodeState.DOWN and changed is not None
        ts = changed - dt.timedelta(seconds=30) if down else now
        for i in range(PORTS_PER_NODE):
            counters: dict[str, int | float] = dict.fromkeys(COUNTERS, 0)
            counters["port_xmit_wait"] = rng.randrange(10**6, 10**8)
            counters["symbol_error"] = rng.randrange(3)
            readings.append(_reading(hostname, i, ts, switch, _UP, counters))
    ports_ingest(readings=readings, now=now)
    return len(readings)


def port_readings(
    *,
    cluster: Cluster,
    now: dt.datetime,
    rng: random.Random,
    silent: Collection[str],
    flapping: Collection[tuple[str, int]],
    down: Collection[tuple[str, int]],
) -> list[PortReading]:
    """A new reading at `now` of every port of the cluster's nodes that report (not down,
    not silent), grown from its stored one; `flapping` and `down` are (host, port index)."""
    out = []
    stored = (
        Port.objects.filter(node__cluster=cluster)
        .exclude(node__state=NodeState.DOWN)
        .values_list("node__hostname", "device", "switch", "state", "counters")
    )
    for hostname, name, switch, state, counters in stored.iterator(chunk_size=2000):
        if hostname in silent or not name.startswith("mlx5_"):
            continue
        index = int(name[5:]) if name[5:].isdigit() else -1
        grown = dict(counters or {})
        grown["port_xmit_wait"] = grown.get("port_xmit_wait", 0) + rng.randrange(1000, 50_000)
        for counter, chance in _NOISE.items():
            if rng.random() < chance:
                grown[counter] = grown.get(counter, 0) + 1
        words = _UP
        if (hostname, index) in down:
            words = _DOWN
            if state != "DOWN":  # the link just went: counted once
                grown["link_downed"] = grown.get("link_downed", 0) + 1
        elif (hostname, index) in flapping:
            grown["link_error_recovery"] = grown.get("link_error_recovery", 0) + FLAP_RECOVERIES
        out.append(_reading(hostname, index, now, switch, words, grown))
    return out


def _reading(
    hostname: str,
    index: int,
    ts: dt.datetime,
    switch: str,
    words: tuple[str, str],
    counters: dict[str, int | float],
) -> PortReading:
    return PortReading(
        hostname,
        device(index),
        1,
        ts,
        state=words[0],
        phys_state=words[1],
        rate_gbps=RATE_GBPS,
        counters=counters,
        switch=switch,
    )
