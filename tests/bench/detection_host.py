"""The host readings of the detection-quality run's simulated cluster (`tests.bench.detection`):
each node's memory controllers, mounts, PCIe devices, clock and out-of-memory kills, grown
tick by tick by the simulator's own host model (`apps.simulator.host`: `node_first_readings`,
`next_readings`), its host faults raised from its one table (`HOST_FAULTS`), and decoys just
under each host check's threshold.

The agents' nodes send their readings as JSON (`host: [...]` beside `samples` and `ports`,
every kind); node_exporter's nodes as its text (EDAC, filesystem, timex and vmstat series,
no PCIe: node_exporter publishes none). The faults' expectations come from docs/checks.md
(the table's `check` and `result`, and each check's section), never from the detectors.
Pure: no database.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from apps.simulator.host import (
    HOST_FAULTS_BY_SLUG,
    NIC_BUSES,
    SCRATCH,
    HostFault,
    Placed,
    gpu_address,
    next_readings,
    node_first_readings,
)
from apps.telemetry.host_kinds import HOST_KINDS
from tests.bench.detection_sim import GPUS, RULES, TICKS, Decoy, Fault, T, expect, iso

# The host checks run after each of the last three ticks, T-2, T-1 and T (`RUNS`); the first
# run only records each counter (growth is measured from the next), so a counter's growth
# comes after it.
FIRST_GROWTH = T - 1
# docs/checks.md's rule of each host fault of the simulator's table.
RULE_OF = {
    "edac_ce_burst": "host_ce",
    "edac_ue": "host_ue",
    "pcie_x8": "pcie_warn",
    "aer_fatal": "pcie_fail",
    "ckpt_readonly": "mount_fail",
    "clock_unsynced": "clock",
    "oom_kill": "oom",
}
Change = Callable[[dict[str, Any]], None]


@dataclass
class _Planned:
    """A table fault where it lands and the ticks it is on: [first, end) for one held, the
    first alone for a counter's growth (`once`)."""

    placed: Placed
    first: int
    end: int = TICKS


@dataclass
class HostPlan:
    """What a seed's host readings do: the table's faults, and changes of the bench's own
    (decoys, an offset past the limit) by (tick, node, kind, subject)."""

    faults: list[Fault] = field(default_factory=list)
    decoys: list[Decoy] = field(default_factory=list)
    placed: list[_Planned] = field(default_factory=list)
    changes: dict[tuple[int, str, str, str], list[Change]] = field(default_factory=dict)


def _target(kind: str, host: str, subject: str) -> str:
    """The result target a host check gives this subject (docs/checks.md, Host checks)."""
    if kind == "memory":
        return f"mc:{host}/{subject}"
    if kind == "pcie":
        return f"pcie:{host}/{subject}"
    if kind == "filesystem":
        return f"mount:{host}:{subject}"
    if kind == "clock":
        return f"clock:{host}"
    return f"node:{host}"


def _set(name: str, value: Any) -> Change:
    return lambda values: values.__setitem__(name, value)


def _add(name: str, amount: int) -> Change:
    return lambda values: values.__setitem__(name, values.get(name, 0) + amount)


class Host:
    """A seed's host readings: planned once, then read tick by tick."""

    def __init__(
        self,
        seed: int,
        hosts: list[str],
        exporters: Collection[str],
        *,
        faulty: Collection[str],
        decoyed: Collection[str],
        quiet: Collection[str],
        categories: Callable[[str], set[str]],
    ) -> None:
        """`faulty`: nodes that stop reporting, are drained or carry another check's fault —
        no host fault goes there, as a drain takes a node out of the checks and one incident
        key would blur two faults; `decoyed`: nodes with another check's decoy, which a host
        fault that drains avoids while it can; `quiet`: nodes that stop reporting at some
        tick, where no host decoy goes either; `categories`: the incident categories other
        checks' faults open on a node or on the job it runs."""
        self.seed = seed
        self.rng = random.Random(seed * 6151 + 44)  # its own: the other draws stay as they were
        self.exporters = set(exporters)
        self.state: dict[str, dict[tuple[str, str], tuple[dt.datetime, dict[str, Any]]]] = {}
        self.plan = HostPlan()
        self._usable = [h for h in hosts if h not in faulty]
        self.rng.shuffle(self._usable)
        self._decoyed = set(decoyed)
        self._anyone = sorted(h for h in hosts if h not in quiet)
        self._categories = categories
        self._on: dict[str, set[str]] = {}  # node → the host checks whose fault is on it
        self._plan()

    # the plan

    def _node(self, check: str, *, drains: bool, agent: bool, category: str = "") -> str:
        """A node for a fault of `check`: one of its own when the fault `drains` (one with no
        other check's decoy first), else one no fault of that check is on, the least used
        first; an agent's for a PCIe fault; none whose job has a fault of `category`."""
        pool = [
            h
            for h in self._usable
            if (not agent or h not in self.exporters)
            and not (category and category in self._categories(h))
            and check not in self._on.get(h, set())
            and not (drains and h in self._on)
        ]
        # The agents' nodes, which alone report PCIe, last when any node will do.
        if drains:
            pool.sort(key=lambda h: (h in self._decoyed, not agent and h not in self.exporters))
        else:
            pool.sort(key=lambda h: (len(self._on.get(h, ())), h not in self.exporters))
        pick = pool[0]  # IndexError: no node fits
        self._on.setdefault(pick, set()).add(check)
        if drains:
            self._usable.remove(pick)  # nothing else goes there
        return pick

    def _raise(self, slug: str, *, first: int, end: int = TICKS, device: int = 0) -> None:
        """The table's fault `slug` on a node: raised at tick `first` (a counter's growth) or
        held over [first, end)."""
        fault: HostFault = HOST_FAULTS_BY_SLUG[slug]
        rule = RULE_OF[slug]
        assert RULES[rule][:2] == (fault.check, fault.result), slug  # the table says as docs do
        drains = fault.result == "fail"  # docs/checks.md: every host check's fail drains
        category = ""
        if fault.kind == "pcie":
            category = "gpu" if device < GPUS else "nic"
        try:
            host = self._node(fault.check, drains=drains, agent=category != "", category=category)
        except IndexError:  # every node's job has a fault of its category: the other role's
            device = (device + GPUS) % (2 * GPUS)
            category = "gpu" if device < GPUS else "nic"
            host = self._node(fault.check, drains=drains, agent=True, category=category)
        subject = fault.subject(device)
        self.plan.placed.append(_Planned(Placed(fault, host, subject), first, end))
        self.plan.faults.append(
            expect(
                rule,
                fault.words.split(":")[0],
                node=host,
                category=category,
                target=_target(fault.kind, host, subject),
            )
        )

    def _change(self, tick: int, host: str, kind: str, subject: str, change: Change) -> None:
        self.plan.changes.setdefault((tick, host, kind, subject), []).append(change)

    def _decoy(self, label: str, check: str, kind: str, host: str, subject: str) -> None:
        self.plan.decoys.append(Decoy(label, check, node=host, target=_target(kind, host, subject)))

    def _plan(self) -> None:
        rng = self.rng
        growth = (FIRST_GROWTH, T)
        # PCIe first: only the agents' nodes report it.
        device = rng.randrange(GPUS + len(NIC_BUSES))  # a GPU's or a NIC's
        self._raise("aer_fatal", first=rng.choice(growth), device=device)
        self._raise("pcie_x8", first=rng.randint(T - 2, T), device=rng.randrange(GPUS))
        self._raise("edac_ce_burst", first=rng.choice(growth), device=rng.randrange(2))
        self._raise("edac_ue", first=rng.choice(growth), device=rng.randrange(2))
        self._raise("ckpt_readonly", first=rng.randint(T - 2, T))
        # Not synchronised in two runs in a row: from the first run's tick or the next.
        self._raise("clock_unsynced", first=rng.randint(T - 2, T - 1))
        self._raise("oom_kill", first=rng.choice(growth))
        # The bench's own: a clock stepped past ±0.5 s, still synchronised.
        host = self._node("clock", drains=False, agent=False)
        first = rng.randint(T - 2, T)
        offset = rng.choice((-1, 1)) * rng.uniform(0.6, 5.0)
        for tick in range(first, TICKS):
            self._change(tick, host, "clock", "system", _set("offset_s", offset))
        label = "clock offset beyond ±0.5 s"
        self.plan.faults.append(expect("clock", label, node=host, target=f"clock:{host}"))
        self._decoys()

    def _decoys(self) -> None:
        """Just under each host check's threshold, or a harmless look-alike: must pass."""
        rng = self.rng
        used = set(self._on)

        def someone(*, agent: bool = False) -> str:
            pool = [h for h in self._anyone if h not in used]
            host = rng.choice([h for h in pool if not agent or h not in self.exporters])
            used.add(host)
            return host

        host, mc = someone(), rng.choice(("mc0", "mc1"))
        self._change(rng.choice((FIRST_GROWTH, T)), host, "memory", mc, _add("ce_total", 90))
        self._decoy(
            "90 correctable memory errors within an hour", "host_memory", "memory", host, mc
        )
        host, address = someone(agent=True), gpu_address(rng.randrange(GPUS))
        tick = rng.choice((FIRST_GROWTH, T))
        self._change(tick, host, "pcie", address, _add("aer_correctable_total", 90))
        self._decoy("90 AER correctable errors within an hour", "pcie", "pcie", host, address)
        host, address = someone(agent=True), gpu_address(rng.randrange(GPUS))
        for tick in range(TICKS):  # an idle GPU's link slows to save power, keeping its width
            self._change(tick, host, "pcie", address, _set("link_speed_gts", 2.5))
        self._decoy("an idle GPU's link at 2.5 GT/s, x16", "pcie", "pcie", host, address)
        host = someone()
        tick = rng.randint(T - 2, T)  # one run not synchronised
        self.plan.placed.append(
            _Planned(Placed(HOST_FAULTS_BY_SLUG["clock_unsynced"], host, "system"), tick, tick + 1)
        )
        self._decoy("clock not synchronised for one run", "clock", "clock", host, "system")
        host = someone()
        offset = rng.choice((-1, 1)) * rng.uniform(0.40, 0.49)
        for tick in range(TICKS):
            self._change(tick, host, "clock", "system", _set("offset_s", offset))
        self._decoy("clock offset 0.4–0.49 s", "clock", "clock", host, "system")
        host = someone()
        free = int(SCRATCH.size_bytes * rng.uniform(0.055, 0.07))
        for tick in range(TICKS):
            self._change(tick, host, "filesystem", SCRATCH.point, _set("avail_bytes", free))
        self._decoy("/scratch at 5.5–7% free", "storage", "filesystem", host, SCRATCH.point)
        host = someone()
        self._change(0, host, "vmstat", "kernel", _set("oom_kill_total", rng.randint(1, 4)))
        self._change(
            rng.choice((FIRST_GROWTH, T)), host, "vmstat", "kernel", _set("oom_kill_total", 0)
        )
        self._decoy("out-of-memory counter reset (a reboot)", "host_oom", "vmstat", host, "kernel")

    # the ticks

    def tick(
        self, i: int, at: dt.datetime, reporting: Iterable[str]
    ) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """Tick i's host readings of the `reporting` nodes: the agents' `host` items, and
        node_exporter's text of the others by host."""
        held = [
            p.placed for p in self.plan.placed if p.first <= i < p.end and not p.placed.fault.once
        ]
        raised = [p.placed for p in self.plan.placed if p.first == i and p.placed.fault.once]
        items: list[dict[str, Any]] = []
        texts: dict[str, str] = {}
        for host in reporting:
            exporter = host in self.exporters
            stored = self.state.get(host)
            if stored is None:
                fresh = [
                    (r.kind, r.subject, r.values)
                    for r in node_first_readings(host, ts=at, seed=self.seed, gpus=GPUS)
                    if not (exporter and r.kind == "pcie")
                ]
            else:
                rows = ((host, k, s, ts, v) for (k, s), (ts, v) in stored.items())
                mine = [p for p in held if p.hostname == host]
                bumps = [p for p in raised if p.hostname == host]
                grown = next_readings(rows, now=at, rng=self.rng, held=mine, raised=bumps)
                fresh = [(r.kind, r.subject, r.values) for r in grown]
            now: dict[tuple[str, str], tuple[dt.datetime, dict[str, Any]]] = {}
            lines: list[str] = []
            for kind, subject, values in fresh:
                for change in self.plan.changes.get((i, host, kind, subject), []):
                    change(values)
                now[kind, subject] = (at, values)
                if exporter:
                    lines += _series(kind, subject, values)
                else:
                    items.append(
                        {
                            "node": host,
                            "kind": kind,
                            "subject": subject,
                            "ts": iso(at),
                            "values": values,
                        }  # fmt: skip
                    )
            self.state[host] = now
            if lines:
                texts[host] = "\n".join(lines) + "\n"
        return items, texts


def _series(kind: str, subject: str, values: dict[str, Any]) -> list[str]:
    """A subject's values as node_exporter writes them, by the kind's declared series
    (apps/telemetry/host_kinds.py): its subject and text values as labels."""
    declared = HOST_KINDS[kind]
    labels: dict[str, str] = {}
    if declared.subject_label:
        labels[declared.subject_label] = subject.removeprefix("mc") if kind == "memory" else subject
    for value in declared.values:
        if value.type == "text" and value.series and value.name in values:
            labels[value.series] = str(values[value.name])
    said = ",".join(f'{k}="{v}"' for k, v in labels.items())
    said = f"{{{said}}}" if said else ""
    return [
        f"{value.series}{said} {values[value.name]}"
        for value in declared.values
        if value.type != "text" and value.series and value.name in values
    ]
