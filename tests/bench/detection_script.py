"""The seeded script of one simulated cluster (`tests.bench.detection`): noise, decoys just
under each threshold of docs/checks.md, injected faults and what the checks must make of them.

`script_for(seed, end)` is pure — no database: it decides the cluster's nodes and jobs and
every telemetry sweep, dcgm-exporter scrape, kernel-log line, heartbeat and step sample of
each tick. The faults' expectations come from docs/checks.md, never from the detectors.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import statistics
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.bench.detection_fabric import Fabric
from tests.bench.detection_sim import (
    APP_XIDS,
    BUSES,
    CHECKSUM,
    DCGM,
    FATAL_XIDS,
    GPUS,
    HANG_LIMIT_S,
    NODES,
    PROBE_EVERY,
    RUNS,
    TICKS,
    TIMED_TO_THE_END,
    WIDE_SCENARIOS,
    Decoy,
    Fault,
    JobPlan,
    Script,
    T,
    Tick,
    Timeline,
    expect,
    iso,
)

if TYPE_CHECKING:  # imported when the script is built: it reads the simulator's models
    from tests.bench.detection_host import Host

# --- the GPUs --------------------------------------------------------------------------


@dataclass
class _Gpu:
    """A GPU's evolving exporter values, and what is done to it at which tick."""

    host: str
    index: int
    busy: bool
    temp: float
    mem_offset: float
    gemm: float
    sbe: int
    dbe: int
    crc: int
    replay: int
    xid: int = 0
    remap: int = 0
    checksum: float = CHECKSUM
    link_noise: float = 0.15  # chance a link counter grows a little in a sweep
    changes: dict[int, list[Callable[[_Gpu], None]]] = field(default_factory=dict)
    temps: dict[int, tuple[float | None, float | None]] = field(default_factory=dict)
    quiet: tuple[int, int] | None = None  # [first, end) ticks it sends nothing

    def at(self, tick: int, change: Callable[[_Gpu], None]) -> None:
        self.changes.setdefault(tick, []).append(change)


def _set(name: str, value: Any) -> Callable[[_Gpu], None]:
    return lambda g: setattr(g, name, value)


def _add(name: str, amount: int) -> Callable[[_Gpu], None]:
    return lambda g: setattr(g, name, getattr(g, name) + amount)


def _flip(value: float, bit: int) -> float:
    """`value` with one mantissa bit flipped: what a silent data corruption looks like."""
    (raw,) = struct.unpack("<q", struct.pack("<d", value))
    (out,) = struct.unpack("<d", struct.pack("<q", raw ^ (1 << bit)))
    return out


def _fixed_point_median(values: dict[Any, float], ratios: dict[Any, float]) -> None:
    """Set each key of `ratios` to its ratio × the median of all values (specials included,
    as the detectors compute it)."""
    for _ in range(80):
        median = statistics.median(values.values())
        for key, ratio in ratios.items():
            values[key] = ratio * median


# --- the script ------------------------------------------------------------------------


class _Builder:
    def __init__(self, seed: int, end: dt.datetime) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.tl = Timeline(end)
        self.hosts = [f"d{seed:03d}n{i:02d}" for i in range(NODES)]
        self.faults: list[Fault] = []
        self.decoys: list[Decoy] = []
        self.jobs: list[JobPlan] = []
        self.node_quiet: dict[str, tuple[int, int]] = {}
        self.beats: dict[int, list[tuple[str, dt.datetime]]] = {}
        self.events: dict[int, list[dict[str, Any]]] = {}
        self.special_gpus: set[tuple[str, int]] = set()
        self.error_nodes: set[str] = set()  # one gpu_errors fault or decoy per node
        # Nodes whose agent runs without --fabric (none today; a node without ports).
        self.portless: set[str] = set()

    def build(self) -> Script:
        order = self.hosts[:]
        self.rng.shuffle(order)
        # Half the nodes' exporters are scraped by a relay that posts dcgm-exporter text
        # (their GEMM probe still reports as JSON); the others' agents post JSON.
        self.exporters = set(self.rng.sample(self.hosts, NODES // 2))
        taken = self._jobs(order)
        idle = order[taken:]
        busy = set(order[:taken])
        self.gpus = {(h, i): self._gpu(h, i, h in busy) for h in self.hosts for i in range(GPUS)}
        self._nodes(idle)
        # The NIC ports; the nodes a fabric fault may drain (or drained before) carry no
        # gpu_errors fault or decoy, as a drain takes a node out of that check.
        self.fabric = Fabric(
            self.seed, self.hosts, self.exporters, self.node_quiet, self._job_of, self.portless
        )
        self.error_nodes |= self.fabric.reserved
        self._compute()
        self._gpu_errors()
        self._thermal()
        self._probes()
        # The host readings; a host fault on a node of its own, no other check's fault on it.
        self.host = self._host()
        ticks: list[Tick] = []
        for i in range(TICKS):
            ticks.append(self._tick(i, ticks[-1] if ticks else None))
        return Script(
            self.seed,
            f"detect-{self.seed}",
            self.tl,
            self.hosts,
            self.jobs,
            ticks,
            self.faults + self.fabric.faults + self.host.plan.faults,
            self.decoys + self.fabric.decoys + self.host.plan.decoys,
            drained=self.fabric.drained,
        )

    def _host(self) -> Host:
        """The host readings, their faults on nodes no other check's fault is on."""
        from tests.bench.detection_host import Host

        faults = self.faults + self.fabric.faults
        quiet = set(self.node_quiet)
        faulty = quiet | set(self.fabric.drained) | {f.node for f in faults if f.node}
        decoyed = self.error_nodes | self.fabric.reserved
        decoyed |= {d.node for d in self.decoys + self.fabric.decoys if d.node}
        by_job: dict[int | None, set[str]] = {}
        for f in faults:
            job = f.job if f.node is None else self._job_of(f.node)
            if f.category and job is not None:
                by_job.setdefault(job, set()).add(f.category)

        def categories(host: str) -> set[str]:
            job = self._job_of(host)
            return by_job.get(job, set()) if job is not None else set()

        return Host(
            self.seed,
            self.hosts,
            self.exporters,
            faulty=faulty,
            decoyed=decoyed,
            quiet=quiet,
            categories=categories,
        )

    def _job_of(self, host: str) -> int | None:
        return next((j for j, job in enumerate(self.jobs) if host in job.hosts), None)

    # jobs and their step samples

    def _jobs(self, order: list[str]) -> int:
        rng = self.rng
        sizes = [rng.randint(6, 8)] + [rng.randint(4, 6) for _ in range(rng.choice((2, 3)))]
        slot, taken = self.seed * 3, 0
        for j, size in enumerate(sizes):
            hosts = sorted(order[taken : taken + size])
            taken += size
            if j == 1:  # the one that reports only per-node samples
                scenario = "hang_node_only" if self.seed % 2 else "node_only"
            else:
                scenario, slot = WIDE_SCENARIOS[slot % len(WIDE_SCENARIOS)], slot + 1
            self.jobs.append(self._job(j, hosts, scenario))
        self._starting(sorted(order[taken : taken + 2]))
        return taken + 2

    def _starting(self, hosts: list[str]) -> None:
        """A job that has not reported a step since it started: a hang after 1,800 s."""
        j, last_run = len(self.jobs), self.tl.run(RUNS - 1)
        stuck = self.seed % 2 == 0
        waited = self.rng.uniform(1900, 3600) if stuck else self.rng.uniform(300, 1700)
        started = last_run - dt.timedelta(seconds=waited)
        name = f"train-{self.seed}-{j}"
        self.jobs.append(JobPlan(name, hosts, "starting", 0.0, started, node_only=False))
        if stuck:
            self.faults.append(expect("hang", "hang, no step since it started", job=j))
        else:
            self.decoys.append(Decoy("started < 1,800 s ago, no step yet", "job_hang", job=j))

    def _job(self, j: int, hosts: list[str], scenario: str) -> JobPlan:
        rng, tl = self.rng, self.tl
        long_steps = scenario == "near_limit" and rng.random() < 0.5
        step_s = rng.uniform(75, 100) if long_steps else rng.uniform(6, 30)
        count = max(60, math.ceil(45 * 60 / step_s))
        # Step times, oldest first: ±5 % jitter, now and then a checkpoint or GC pause.
        steps = []
        for _ in range(count):
            jitter = 1 + rng.uniform(-0.05, 0.05)
            pause = rng.uniform(2, 4) if rng.random() < 0.02 else 1.0
            steps.append((step_s * jitter * pause, jitter))
        last_run = tl.run(RUNS - 1)
        if scenario in ("hang_wide", "hang_node_only"):
            last = last_run - dt.timedelta(seconds=rng.uniform(720, 1800))
        elif scenario == "hang_same_step":
            last = last_run - dt.timedelta(seconds=rng.uniform(720, 1500))
        elif scenario == "near_limit":
            limit = max(HANG_LIMIT_S, 10 * statistics.median(s for s, _ in steps[-50:]))
            last = last_run - dt.timedelta(seconds=rng.uniform(0.93, 0.985) * limit)
        else:
            last = tl.tick(T) - dt.timedelta(seconds=rng.uniform(0, step_s))
        times, t = [], last
        for step_time, _ in reversed(steps):
            times.append(t)
            t -= dt.timedelta(seconds=step_time)
        times.reverse()
        node_only = scenario in ("node_only", "hang_node_only")
        job = JobPlan(
            name=f"train-{self.seed}-{j}",
            hosts=hosts,
            scenario=scenario,
            step_s=step_s,
            started_at=times[0] - dt.timedelta(seconds=rng.uniform(600, 4 * 3600)),
            node_only=node_only,
        )
        top = rng.randint(2_000, 90_000)
        rows = [
            (ts, top - (count - 1 - n), step_time, jitter)
            for n, (ts, (step_time, jitter)) in enumerate(zip(times, steps, strict=True))
        ]
        same_step = scenario == "hang_same_step" or (
            scenario == "hang_node_only" and rng.random() < 0.5
        )
        if same_step:  # every rank keeps re-reporting the step it is stuck at
            t = last + dt.timedelta(seconds=step_s)
            while t <= tl.tick(T):
                rows.append((t, top, step_s, 1.0))
                t += dt.timedelta(seconds=step_s * (1 + rng.uniform(-0.05, 0.05)))
        job.rows = rows
        if scenario == "nan":
            first = tl.run(0) - dt.timedelta(seconds=300)
            candidates = [n for n, r in enumerate(rows) if first <= r[0] <= tl.tick(T)]
            job.nan_row = rng.choice(candidates)
            job.nan_what = rng.choice(("loss", "grad_norm"))
        if scenario.startswith("hang"):
            label = {
                "hang_wide": "hang, job-wide reporter",
                "hang_node_only": "hang, per-node-only reporter",
                "hang_same_step": "hang, same step re-reported",
            }[scenario]
            note = "its ranks re-report the stuck step" if same_step else ""
            self.faults.append(expect("hang", label, job=j, note=note))
        elif scenario == "nan":
            self.faults.append(expect("corrupt", "non-finite loss or grad norm", job=j))
        elif scenario == "near_limit":
            self.decoys.append(Decoy("progress just under the hang limit", "job_hang", job=j))
        elif scenario == "node_only":
            if rng.random() < 0.5:  # its job-wide reporter stopped; the ranks go on
                job.wide_until = tl.tick(T) - dt.timedelta(minutes=rng.uniform(15, 30))
            self.decoys.append(Decoy("healthy per-node-only reporter", "job_hang", job=j))
        return job

    def _compute(self) -> None:
        """Each node's compute factor (±3 %), stragglers at 1.12–1.40× and a decoy at 1.08×
        its job's median, then every job's samples."""
        rng = self.rng
        factors = {h: 1 + rng.uniform(-0.03, 0.03) for job in self.jobs for h in job.hosts}
        timed = [j for j, job in enumerate(self.jobs) if job.scenario in TIMED_TO_THE_END]
        candidates = [(j, h) for j in timed for h in self.jobs[j].hosts]
        rng.shuffle(candidates)
        specials: dict[int, dict[str, float]] = {}
        for n, (j, host) in enumerate(candidates[: rng.randint(1, 2) + 1]):
            ratio = 1.08 if n == 0 else rng.uniform(1.12, 1.40)
            specials.setdefault(j, {})[host] = ratio
            if n == 0:
                self.decoys.append(
                    Decoy("node at 1.08× its job's median compute", "slow_node", node=host)
                )
            else:
                label = "straggler 1.12–1.40× compute"
                self.faults.append(expect("slow", label, node=host))
        for j, ratios in specials.items():
            mine = {h: factors[h] for h in self.jobs[j].hosts}
            _fixed_point_median(mine, ratios)
            factors.update(mine)
        cut = self.tl.tick(T) - dt.timedelta(minutes=35)
        for job in self.jobs:
            for n, (ts, step, step_time, jitter) in enumerate(job.rows):
                if not job.node_only or (job.wide_until and ts < job.wide_until):
                    sample = {
                        "ts": ts,
                        "step": step,
                        "step_time_s": round(step_time, 4),
                        "tokens_per_s": round(4_194_304 / step_time, 1),
                        "loss": round(2.1 - step * 1e-6 + rng.uniform(-0.05, 0.05), 4),
                        "grad_norm": round(rng.uniform(0.3, 1.5), 3),
                    }
                    if n == job.nan_row:
                        sample[job.nan_what] = math.nan if job.nan_what == "loss" else math.inf
                    job.samples.append(sample)
                if ts >= cut:
                    for host in job.hosts:
                        compute = 0.7 * job.step_s * jitter * factors[host]
                        job.samples.append(
                            {
                                "ts": ts,
                                "step": step,
                                "step_time_s": round(step_time, 4),
                                "node": host,
                                "compute_s": round(compute * (1 + rng.uniform(-0.01, 0.01)), 4),
                            }
                        )
            job.samples.sort(key=lambda s: s["ts"])
            job.rows = []

    # nodes and GPUs

    def _gpu(self, host: str, index: int, busy: bool) -> _Gpu:
        rng = self.rng
        return _Gpu(
            host,
            index,
            busy,
            temp=rng.uniform(55, 75) if busy else rng.uniform(35, 45),
            mem_offset=rng.uniform(4, 8),
            gemm=720 * (1 + rng.uniform(-0.02, 0.02)),
            sbe=rng.randint(0, 40),
            dbe=0,
            crc=rng.randint(0, 2000),
            replay=rng.randint(0, 60),
        )

    def _free_gpu(
        self, hosts: list[str] | None = None, *, error_node: bool = False
    ) -> tuple[str, int]:
        """A GPU nothing else is done to (on a node no gpu_errors fault or decoy is on, when
        `error_node`: a drain excludes a node from that check)."""
        quiet = set(self.node_quiet)
        pool = [
            (h, i)
            for h in (hosts or self.hosts)
            if h not in quiet and not (error_node and h in self.error_nodes)
            for i in range(GPUS)
            if (h, i) not in self.special_gpus
        ]
        choice = self.rng.choice(pool)
        self.special_gpus.add(choice)
        if error_node:
            self.error_nodes.add(choice[0])
        return choice

    def _nodes(self, idle: list[str]) -> None:
        """Silent nodes (> 180 s) and one silent for 170 s, among the idle nodes."""
        rng, tl = self.rng, self.tl
        picked = rng.sample(idle, rng.randint(1, 2) + 1)
        decoy, silent = picked[0], picked[1:]
        for host in silent:
            last = rng.randint(T - 12, T - 4)
            self.node_quiet[host] = (last + 1, TICKS)
            self.faults.append(expect("silent", "silent node (> 180 s)", node=host))
        # A node whose agent died (no heartbeat, no telemetry) while its ranks still report
        # per-node step samples: a metric is a sign of life.
        timed = [h for job in self.jobs if job.scenario in TIMED_TO_THE_END for h in job.hosts]
        if timed:
            host = rng.choice(timed)
            self.node_quiet[host] = (rng.randint(T - 12, T - 4), TICKS)
            # its ports fall silent with it: all of them, so none is "missing" (fabric)
            self.decoys.append(Decoy("agent down, ranks still reporting", "heartbeat", host))
        self.node_quiet[decoy] = (T - 3, T)
        self.beats.setdefault(T - 3, []).append((decoy, tl.run(1) - dt.timedelta(seconds=170)))
        self.decoys.append(Decoy("node silent for 170 s", "heartbeat", node=decoy))

    def _event_tick(self) -> int:
        return self.rng.randint(T - 6, T)

    def _gpu_errors(self) -> None:
        rng = self.rng
        for _ in range(rng.randint(1, 2)):  # a fatal XID, on the exporter's gauge
            host, i = self._free_gpu(error_node=True)
            code = rng.choice(list(FATAL_XIDS))
            self.gpus[host, i].at(self._event_tick(), _set("xid", code))
            self._error_fault("fatal XID on the gauge", host, i, FATAL_XIDS[code], f"XID {code}")
        host, i = self._free_gpu(error_node=True)  # a storm: 30 kernel-log lines, one code
        code = rng.choice(list(FATAL_XIDS))
        first = rng.randint(T - 4, T - 1)
        split = rng.randint(10, 20)
        bus = f"0000:{BUSES[i]}:00"  # the kernel's spelling; the agent sends no index
        for tick, lines in ((first, split), (first + 1, 30 - split)):
            at = self.tl.tick(tick)
            for n in range(lines):
                ts = at - dt.timedelta(seconds=50) + dt.timedelta(milliseconds=1700 * n + 3)
                self.events.setdefault(tick, []).append(
                    {
                        "node": host,
                        "ts": iso(ts),
                        "kind": "xid",
                        "code": code,
                        "pci_bus": bus,
                        "message": f"pid={4000 + n}, name=python, Ch 00000008",
                    }
                )
        self.gpus[host, i].at(first, _set("xid", code))  # the gauge shows it too
        self._error_fault(
            "XID storm, 30 kernel-log lines", host, i, FATAL_XIDS[code], f"XID {code}"
        )
        if rng.random() < 0.6:
            host, i = self._free_gpu(error_node=True)
            if rng.random() < 0.6:
                self.gpus[host, i].at(self._event_tick(), _add("dbe", rng.randint(1, 3)))
                self._error_fault("ECC double-bit growth", host, i, "gpu_hbm")
            else:
                self.gpus[host, i].at(self._event_tick(), _set("remap", 1))
                self._error_fault("HBM row-remap failure", host, i, "gpu_hbm")
        host, i = self._free_gpu(error_node=True)
        self.gpus[host, i].at(self._event_tick(), _add("crc", rng.randint(101, 400)))
        self.faults.append(expect("link", "NVLink CRC growth > 100", node=host, gpu=i))
        host, i = self._free_gpu(error_node=True)
        self.gpus[host, i].link_noise = 0.0
        self.gpus[host, i].at(self._event_tick(), _add("crc", 100))
        self.decoys.append(Decoy("NVLink CRC growth of exactly 100", "gpu_errors", host, i))
        for _ in range(rng.randint(1, 2)):  # application-level: warn, never an incident
            host, i = self._free_gpu(error_node=True)
            code = rng.choice(APP_XIDS)
            self.gpus[host, i].at(self._event_tick(), _set("xid", code))
            label = "application XID (warn, no incident)"
            self.faults.append(expect("app_xid", label, node=host, gpu=i, note=f"XID {code}"))
        host, i = self._free_gpu(error_node=True)  # a GPU that stops reporting for good
        last = rng.randint(T - 7, T - 4)
        self.gpus[host, i].quiet = (last + 1, TICKS)
        self._error_fault("vanished GPU (missing two runs)", host, None, "gpu")
        host, i = self._free_gpu(error_node=True)  # … and one missing for a single run
        self.gpus[host, i].quiet = (T - 3, T)
        self.decoys.append(Decoy("GPU missing for one run", "gpu_errors", node=host))
        host, i = self._free_gpu(error_node=True)  # an old XID the gauge still holds
        self.gpus[host, i].xid = rng.choice(APP_XIDS)
        self.decoys.append(Decoy("XID gauge holding an old value", "gpu_errors", host, i))
        host, i = self._free_gpu(error_node=True)  # a driver reload resets the DBE counter
        self.gpus[host, i].dbe = rng.randint(1, 2)
        self.gpus[host, i].at(self._event_tick(), _set("dbe", 0))
        self.decoys.append(Decoy("ECC DBE counter reset", "gpu_errors", host, i))
        # Harmless: a driver reload on one node resets every GPU's volatile counters (ECC,
        # NVLink CRC, PCIe replay) within the first run's window, while they keep growing a
        # little before and after it.
        host, _ = self._free_gpu(error_node=True)
        reload = rng.randint(T - 9, T - 3)
        for i in range(GPUS):
            g = self.gpus[host, i]
            self.special_gpus.add((host, i))
            g.link_noise = 0.6
            for name in ("sbe", "crc", "replay"):
                g.at(reload, _set(name, 0))

    def _error_fault(
        self, label: str, host: str, gpu: int | None, category: str, note: str = ""
    ) -> None:
        self.faults.append(
            expect("out_of_service", label, node=host, gpu=gpu, category=category, note=note)
        )

    def _thermal(self) -> None:
        rng = self.rng
        for _ in range(rng.randint(1, 2)):
            host, i = self._free_gpu()
            first = rng.choice((T - 2, T - 1))
            hot_mem = rng.random() < 0.3
            for tick in (first, first + 1):
                self.gpus[host, i].temps[tick] = (
                    (None, round(rng.uniform(95, 99), 1))
                    if hot_mem
                    else (round(rng.uniform(90, 97), 1), None)
                )
            note = "HBM ≥ 95 °C" if hot_mem else "GPU ≥ 90 °C"
            self.faults.append(expect("hot", "hot for two runs", node=host, gpu=i, note=note))
        host, i = self._free_gpu()
        for tick in range(TICKS):
            self.gpus[host, i].temps[tick] = (round(rng.uniform(89.0, 89.9), 1), None)
        self.decoys.append(Decoy("GPU at 89 °C", "thermal", host, i))
        host, i = self._free_gpu()
        for tick in range(TICKS):
            self.gpus[host, i].temps[tick] = (None, round(rng.uniform(94.0, 94.9), 1))
        self.decoys.append(Decoy("HBM at 94 °C", "thermal", host, i))
        host, i = self._free_gpu()
        self.gpus[host, i].temps[T - 1] = (round(rng.uniform(91, 93), 1), None)
        self.decoys.append(Decoy("one 91 °C spike", "thermal", host, i))

    def _probes(self) -> None:
        """GEMM throughput (±2 %), a slow GPU at ≤ 0.85× and a decoy at 0.91× the median,
        and a flipped checksum."""
        rng = self.rng
        slow = {}
        for _ in range(rng.randint(1, 2)):
            host, i = self._free_gpu()
            slow[host, i] = rng.uniform(0.70, 0.85)
            self.faults.append(expect("slow", "slow GEMM (≤ 0.85× median)", node=host, gpu=i))
        host, i = self._free_gpu()
        slow[host, i] = 0.91
        self.decoys.append(Decoy("GEMM at 0.91× median", "slow_node", host, i))
        levels = {key: g.gemm for key, g in self.gpus.items()}
        _fixed_point_median(levels, slow)
        for key, level in levels.items():
            self.gpus[key].gemm = level
        host, i = self._free_gpu()
        flip = _flip(CHECKSUM, rng.randint(0, 51))
        self.gpus[host, i].at(rng.choice((T - PROBE_EVERY, T)), _set("checksum", flip))
        self.faults.append(expect("corrupt", "checksum flip", node=host, gpu=i))

    # the ticks

    def _tick(self, i: int, before: Tick | None) -> Tick:
        tl = self.tl
        at = tl.tick(i)
        tick = Tick(events=self.events.get(i, []), beats=list(self.beats.get(i, [])))
        probe = (T - i) % PROBE_EVERY == 0
        lines: dict[str, list[str]] = {}
        reporting: list[str] = []
        for host in self.hosts:
            quiet = self.node_quiet.get(host)
            if quiet and quiet[0] <= i < quiet[1]:
                continue
            tick.beats.append((host, at))
            reporting.append(host)
            for index in range(GPUS):
                g = self.gpus[host, index]
                for change in g.changes.get(i, []):
                    change(g)
                self._wander(g)
                if g.quiet and g.quiet[0] <= i < g.quiet[1]:
                    continue
                bus = f"00000000:{BUSES[index]}:00.0"  # dcgm's pci_bus_id
                metrics = self._metrics(g, i, probe, dcgm=host in self.exporters)
                if host not in self.exporters:
                    sample = {"node": host, "gpu": index, "ts": iso(at), "metrics": metrics}
                    tick.telemetry.append({**sample, "pci_bus": bus})
                    continue
                probed = {
                    k: metrics.pop(k) for k in ("gemm_tflops", "gemm_checksum") if k in metrics
                }
                if probed:  # the probe finished just before the scrape
                    ts = iso(at - dt.timedelta(seconds=2))
                    tick.telemetry.append({"node": host, "gpu": index, "ts": ts, "metrics": probed})
                labels = (
                    f'gpu="{index}",UUID="GPU-{self.seed:04x}{host[-2:]}-{index:04x}",'
                    f'pci_bus_id="{bus}",device="nvidia{index}",modelName="NVIDIA H100 80GB HBM3",'
                    f'Hostname="{host}"'
                )
                for name, value in metrics.items():
                    lines.setdefault(DCGM[name], []).append(f"{DCGM[name]}{{{labels}}} {value}")
        tick.exposition = "".join(
            f"# TYPE {name} gauge\n" + "\n".join(series) + "\n" for name, series in lines.items()
        )
        tick.ports, tick.node_text = self.fabric.tick(i, at, reporting)
        tick.host, host_text = self.host.tick(i, at, reporting)
        for host, text in host_text.items():
            tick.node_text[host] = tick.node_text.get(host, "") + text
        previous = tl.tick(i - 1) if i else None
        for j, job in enumerate(self.jobs):
            batch = [
                s for s in job.samples if s["ts"] <= at and (previous is None or s["ts"] > previous)
            ]
            if batch:
                tick.metrics[j] = [{**s, "ts": iso(s["ts"])} for s in batch]
        if before is not None and self.rng.random() < 0.25:
            beating = {h for h, _ in tick.beats}
            tick.again = Tick(
                telemetry=[s for s in before.telemetry if s["node"] in beating],
                ports=[p for p in before.ports if p["node"] in beating],
                host=[r for r in before.host if r["node"] in beating],
                node_text={h: text for h, text in before.node_text.items() if h in beating},
                events=before.events,
                metrics=before.metrics,
                exposition="\n".join(
                    line
                    for line in before.exposition.splitlines()
                    if any(f'Hostname="{host}"' in line for host in beating) or line.startswith("#")
                ),
            )
        return tick

    def _wander(self, g: _Gpu) -> None:
        rng = self.rng
        hi = 84 if g.busy else 50
        g.temp = min(hi, max(30, g.temp + rng.uniform(-1.5, 1.5)))
        if rng.random() < 0.05:
            g.sbe += rng.randint(1, 3)
        if rng.random() < g.link_noise:
            g.crc += rng.randint(1, 3)
        if rng.random() < g.link_noise / 3:
            g.replay += 1

    def _metrics(self, g: _Gpu, i: int, probe: bool, *, dcgm: bool) -> dict[str, float]:
        """A GPU's values at tick i; DCGM reports temperatures in whole degrees."""
        rng = self.rng
        temp, mem = round(g.temp, 1), round(min(g.temp + g.mem_offset, 92), 1)
        hot_temp, hot_mem = g.temps.get(i, (None, None))
        temp = hot_temp if hot_temp is not None else temp
        mem = hot_mem if hot_mem is not None else mem
        metrics: dict[str, float] = {
            "gpu_util": rng.randint(88, 100) if g.busy else 0,
            "temp_c": math.floor(temp) if dcgm else temp,
            "mem_temp_c": math.floor(mem) if dcgm else mem,
            "power_w": round(rng.uniform(550, 700) if g.busy else rng.uniform(60, 90), 1),
            "xid": g.xid,
            "ecc_sbe_total": g.sbe,
            "ecc_dbe_total": g.dbe,
            "nvlink_crc_errors": g.crc,
            "pcie_replay_total": g.replay,
            "row_remap_failure": g.remap,
        }
        if probe:
            metrics["gemm_tflops"] = round(g.gemm * (1 + rng.uniform(-0.001, 0.001)), 3)
            metrics["gemm_checksum"] = g.checksum
        return metrics


def script_for(seed: int, end: dt.datetime) -> Script:
    """Seed `seed`'s simulation, its last check run at `end`. Pure: no database."""
    return _Builder(seed, end).build()
