"""The NIC ports of the detection-quality run's simulated cluster (`tests.bench.detection`):
2–8 ports per node (`mlx5_N` port 1), their counters' noise, the fabric's faults and decoys,
and each tick's readings — the agents' `ports` (with the leaf switch at each cable's far
end) and node_exporter's `node_infiniband_*` text of the nodes a relay scrapes.

Leaves: the agents' nodes in fours (by hostname), a node's even devices cabled to its
four's leaf `a`, its odd ones to leaf `b`. node_exporter knows no switch: those nodes' ports
name none. The faults' expectations come from docs/checks.md (`fabric`), never from the
detector. Pure: no database.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from tests.bench.detection_sim import FABRIC_FIRST, TICKS, Decoy, Fault, T, expect, iso

LEAF_NODES = 4
RATE_GBPS = 400
# What the first fabric run records; growth is judged from the run after it.
FIRST_GROWTH = FABRIC_FIRST + 1
# node_exporter's series for the ports' names (docs/integrations.md, NIC ports).
SERIES = {
    "link_downed": "link_downed_total",
    "link_error_recovery": "link_error_recovery_total",
    "symbol_error": "symbol_error_total",
    "local_link_integrity_errors": "local_link_integrity_errors_total",
    "excessive_buffer_overrun_errors": "excessive_buffer_overrun_errors_total",
    "port_rcv_errors": "port_errors_received_total",
    "port_xmit_discards": "port_discards_transmitted_total",
    "port_rcv_remote_physical_errors": "port_receive_remote_physical_errors_total",
    "port_xmit_wait": "port_transmit_wait_total",
}
STATE_ID = {"ACTIVE": 4, "DOWN": 1}
PHYS_ID = {"LinkUp": 5, "Polling": 2, "Disabled": 3}


@dataclass
class _Port:
    """One NIC port's evolving values, and what is done to it at which tick."""

    host: str
    device: int
    switch: str  # "" for a node whose ports node_exporter reports
    counters: dict[str, int]
    state: str = "ACTIVE"
    phys_state: str = "LinkUp"
    flap_noise: float = 0.02  # chance link_error_recovery grows by one in a tick
    changes: dict[int, list[Callable[[_Port], None]]] = field(default_factory=dict)
    quiet: tuple[int, int] | None = None  # [first, end) ticks it sends nothing

    @property
    def name(self) -> str:
        return f"mlx5_{self.device}/1"

    def at(self, tick: int, change: Callable[[_Port], None]) -> None:
        self.changes.setdefault(tick, []).append(change)


def _grow(name: str, amount: int) -> Callable[[_Port], None]:
    def change(p: _Port) -> None:
        p.counters[name] += amount

    return change


def _down(*, counted: bool, phys: str = "Polling") -> Callable[[_Port], None]:
    """The link goes down: state DOWN; `counted`, link_downed +1 (a link that failed, not
    one an operator disabled)."""

    def change(p: _Port) -> None:
        p.state, p.phys_state = "DOWN", phys
        if counted:
            p.counters["link_downed"] += 1

    return change


def _reset(p: _Port) -> None:
    for name in p.counters:
        p.counters[name] = 0


class Fabric:
    """A seed's NIC ports: planned once (faults, decoys, the nodes they need to themselves),
    then read tick by tick."""

    def __init__(
        self,
        seed: int,
        hosts: list[str],
        exporters: set[str],
        quiet: dict[str, tuple[int, int]],
        job_of: Callable[[str], int | None],
        portless: Collection[str] = (),
    ) -> None:
        self.rng = random.Random(seed * 7919 + 27)  # its own: the GPUs' draws stay as they were
        self.exporters = exporters
        self.quiet = set(quiet)
        self.job_of = job_of
        self.faults: list[Fault] = []
        self.decoys: list[Decoy] = []
        self.reserved: set[str] = set()  # nodes a fabric fault may drain, or drained before
        self.drained: list[str] = []
        agents = sorted(h for h in hosts if h not in exporters)
        self.pod = {h: n // LEAF_NODES for n, h in enumerate(agents)}
        self.ports: dict[str, list[_Port]] = {
            h: [] if h in portless else self._ports(h) for h in hosts
        }
        self.special: set[tuple[str, int]] = set()
        self._plan()

    def _ports(self, host: str) -> list[_Port]:
        rng = self.rng
        out = []
        for device in range(rng.randint(2, 8)):
            switch = ""
            if host in self.pod:
                switch = f"leaf{self.pod[host]}{'ab'[device % 2]}"
            counters = {
                "link_downed": rng.randint(0, 2),
                "link_error_recovery": rng.randint(0, 12),
                "symbol_error": rng.randint(0, 400),
                "local_link_integrity_errors": 0,
                "excessive_buffer_overrun_errors": 0,
                "port_rcv_errors": rng.randint(0, 80),
                "port_xmit_discards": rng.randint(0, 900),
                "port_rcv_remote_physical_errors": 0,
                "port_xmit_wait": rng.randint(10**6, 10**9),
            }
            if host not in self.exporters:  # hw_counters/: the agent's alone
                counters |= {"rnr_nak_retry_err": rng.randint(0, 30), "local_ack_timeout_err": 0}
            out.append(_Port(host, device, switch, counters))
        return out

    # the plan

    def _free(self, pool: list[str], *, other_pod_than: set[int] | None = None) -> str:
        """A node of `pool` not quiet nor reserved (and, for a fault that fails, not in a
        pod one already failing is in: two failing ports behind a leaf are not its fault)."""
        choices = [
            h
            for h in pool
            if h not in self.quiet
            and self.ports[h]
            and h not in self.reserved
            and (other_pod_than is None or self.pod.get(h, -1) not in other_pod_than)
        ]
        host = self.rng.choice(choices)
        self.reserved.add(host)
        if other_pod_than is not None and host in self.pod:
            other_pod_than.add(self.pod[host])
        return host

    def _port(self, host: str, *, switch: str | None = None) -> _Port:
        """A port of `host` nothing else is done to (cabled to `switch`, when given)."""
        pool = [
            p
            for p in self.ports[host]
            if (host, p.device) not in self.special and (switch is None or p.switch == switch)
        ]
        port = self.rng.choice(pool)
        self.special.add((host, port.device))
        return port

    def _fault(self, rule: str, label: str, port: _Port, **kw: Any) -> None:
        self.faults.append(expect(rule, label, node=port.host, port=port.name, **kw))

    def _decoy(self, label: str, port: _Port) -> None:
        self.decoys.append(Decoy(label, "fabric", node=port.host, port=port.name))

    def _plan(self) -> None:
        rng = self.rng
        hosts = sorted(self.ports)
        self._bad_leaf()
        failing_pods: set[int] = set()
        # A link that went down: DOWN, link_downed +1.
        port = self._port(self._free(hosts, other_pod_than=failing_pods))
        port.at(rng.randint(FIRST_GROWTH, T), _down(counted=True))
        self._fault("port_down", "NIC link down (DOWN, link_downed +1)", port)
        # A port that stops reporting while its node reports: fails on the second run.
        port = self._port(self._free(hosts, other_pod_than=failing_pods))
        port.quiet = (rng.randint(T - 6, T - 1), TICKS)
        self._fault("port_down", "NIC port silent two runs, node reporting", port)
        # A flapping link warned three runs within the hour: fails (on a job's node, whose
        # incident is the job's; its warnings' incident is the node's).
        busy = [h for h in hosts if self.job_of(h) is not None]
        port = self._port(self._free(busy, other_pod_than=failing_pods))
        first = rng.randint(FIRST_GROWTH, T - 2)
        for tick in range(first, first + 3):
            port.at(tick, _grow("link_error_recovery", rng.randint(6, 20)))
        self._fault("port_warn", "flapping link (> 5 recoveries/min)", port)
        self._fault("port_down", "flapping link, 3 warnings within an hour", port)
        # A link flapping for a run or two, and one with symbol errors over 10/s: warnings.
        port = self._port(self._free(hosts))
        first = rng.randint(FIRST_GROWTH, T - 1)
        for tick in range(first, first + rng.randint(1, 2)):
            port.at(tick, _grow("link_error_recovery", rng.randint(6, 20)))
        self._fault("port_warn", "flapping link (> 5 recoveries/min)", port)
        port = self._port(self._free(hosts))
        port.at(rng.randint(FIRST_GROWTH, T), _grow("symbol_error", rng.randint(700, 3000)))
        self._fault("port_warn", "symbol errors > 10/s", port)
        self._decoys(hosts)

    def _bad_leaf(self) -> None:
        """A leaf switch whose ports all go DOWN on the ≥ 3 reporting nodes behind it (of at
        most 4): one network_switch_cable incident naming them."""
        rng = self.rng
        pods: dict[int, list[str]] = {}
        for host, pod in self.pod.items():
            pods.setdefault(pod, []).append(host)
        fit = [
            p
            for p, members in sorted(pods.items())
            if sum(h not in self.quiet for h in members) >= 3
        ]
        pod = rng.choice(fit)
        leaf = f"leaf{pod}{rng.choice('ab')}"
        nodes = sorted(h for h in pods[pod] if h not in self.quiet)
        tick = rng.randint(FIRST_GROWTH, T)
        interrupts = any(self.job_of(h) is not None for h in nodes)
        for host in nodes:
            self.reserved.add(host)
            for port in self.ports[host]:
                if port.switch == leaf:
                    self.special.add((host, port.device))
                    port.at(tick, _down(counted=True))
                    self._fault(
                        "leaf",
                        "bad leaf switch (its ports DOWN on ≥ 3 nodes)",
                        port,
                        component=f"switch:{leaf}",
                        interrupts=interrupts,
                    )

    def _decoys(self, hosts: list[str]) -> None:
        rng = self.rng
        anyone = [h for h in hosts if h not in self.quiet]
        port = self._port(rng.choice(anyone))
        port.at(rng.randint(FIRST_GROWTH, T), _reset)
        self._decoy("NIC counters reset to 0", port)
        port = self._port(rng.choice(anyone))
        port.at(rng.randint(FIRST_GROWTH, T), _grow("symbol_error", 1))
        self._decoy("a single symbol error", port)
        port = self._port(rng.choice(anyone))
        port.flap_noise = 0.0
        port.at(rng.randint(FIRST_GROWTH, T), _grow("link_error_recovery", 5))
        self._decoy("link error recoveries at exactly 5/min", port)
        port = self._port(rng.choice(anyone))
        tick = rng.randint(FIRST_GROWTH, T - 1)
        port.quiet = (tick, tick + 1)
        self._decoy("NIC port missing for one run", port)
        # A node an operator drained: a port taken down there opens nothing.
        host = self._free(hosts)
        self.drained.append(host)
        port = self._port(host)
        port.at(rng.randint(FIRST_GROWTH, T), _down(counted=False, phys="Disabled"))
        self._decoy("port DOWN on a node already drained", port)

    # the ticks

    def tick(
        self, i: int, at: dt.datetime, reporting: list[str]
    ) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """Tick i's readings of the `reporting` nodes: the agents' `ports`, and node_exporter's
        text of the others by host."""
        ports: list[dict[str, Any]] = []
        texts: dict[str, str] = {}
        for host in reporting:
            lines: list[str] = []
            for p in self.ports[host]:
                for change in p.changes.get(i, []):
                    change(p)
                self._wander(p)
                if p.quiet and p.quiet[0] <= i < p.quiet[1]:
                    continue
                if host in self.exporters:
                    lines += self._series(p)
                    continue
                reading: dict[str, Any] = {
                    "node": host,
                    "device": f"mlx5_{p.device}",
                    "port": 1,
                    "ts": iso(at),
                    "metrics": {
                        "state": f"{STATE_ID[p.state]}: {p.state}",
                        "phys_state": f"{PHYS_ID[p.phys_state]}: {p.phys_state}",
                        "rate_gbps": f"{RATE_GBPS} Gb/sec (4X NDR)",
                        **p.counters,
                    },
                }
                if p.switch:
                    reading["switch"] = p.switch
                    reading["switch_port"] = str(1 + self.pod[host] * 8 + p.device // 2)
                ports.append(reading)
            if lines:
                texts[host] = "\n".join(lines) + "\n"
        return ports, texts

    def _wander(self, p: _Port) -> None:
        """Counters that grow well under every threshold: what a healthy port shows."""
        rng, c = self.rng, p.counters
        c["port_xmit_wait"] += rng.randint(0, 5 * 10**6)
        if rng.random() < 0.05:
            c["symbol_error"] += rng.randint(1, 3)
        if rng.random() < 0.1:
            c["port_rcv_errors"] += rng.randint(1, 3)
        if rng.random() < 0.2:
            c["port_xmit_discards"] += rng.randint(1, 40)
        if rng.random() < p.flap_noise:
            c["link_error_recovery"] += 1

    @staticmethod
    def _series(p: _Port) -> list[str]:
        labels = f'device="mlx5_{p.device}",port="1"'
        values = {
            "state_id": STATE_ID[p.state],
            "physical_state_id": PHYS_ID[p.phys_state],
            "rate_bytes_per_second": RATE_GBPS * 125_000_000,
            **{SERIES[k]: v for k, v in p.counters.items() if k in SERIES},
        }
        return [f"node_infiniband_{name}{{{labels}}} {value}" for name, value in values.items()]
