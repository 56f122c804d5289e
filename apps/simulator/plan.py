"""A deterministic plan of a cluster's history: nodes, jobs, interruptions. Pure, no database."""

from __future__ import annotations

import datetime as dt
import math
import random
from dataclasses import dataclass, field

from apps.simulator.accelerators import H100, MIXES, Accelerator, fleet_models
from apps.simulator.mix import (
    HARDWARE,
    LLAMA3_RATE_PER_NODE_DAY,
    road_timing,
    timing,
    weighted_categories,
)

GPUS_PER_NODE = 8
NODES_PER_RACK = 16
H100_PEAK_TFLOPS = 989.4  # dense BF16, H100 SXM
MODELS = (
    ("llama-7b", 6.7e9, 4_194_304),
    ("llama-13b", 13e9, 4_194_304),
    ("code-34b", 34e9, 8_388_608),
    ("llama-70b", 70e9, 8_388_608),
)
FLAGSHIP = ("llama-405b", 405e9, 16_777_216)


@dataclass
class Interruption:
    """One failure (or planned stop) of a node, and of the job on it if any."""

    at: dt.datetime
    category: str
    node: int
    planned: bool = False
    job: int | None = None
    detected_at: dt.datetime | None = None
    localized_at: dt.datetime | None = None
    recovered_at: dt.datetime | None = None
    node_back_at: dt.datetime | None = None
    nodes: list[int] = field(default_factory=list)
    # The road back of an unexpected interruption of a job (docs/simulator.md, The road
    # back): the blamed node drained, the job's next attempt started, its start-up over and
    # the checkpoint loading, the checkpoint restored (training resumes: `recovered_at`).
    mitigated_at: dt.datetime | None = None
    restarted_at: dt.datetime | None = None
    loading_at: dt.datetime | None = None
    restored_at: dt.datetime | None = None


@dataclass
class JobPlan:
    """A training run on a fixed set of nodes."""

    index: int
    name: str
    model: str
    n_params: float
    batch_tokens: int
    nodes: list[int]
    start: dt.datetime
    end: dt.datetime | None
    status: str
    mfu: float
    checkpoint_every_s: float
    checkpoint_blocking_s: tuple[float, float]
    hang_at: dt.datetime | None = None
    hang_node: int | None = None  # the node a hang waits on: its progress stops first
    slow_node: int | None = None
    interruptions: list[Interruption] = field(default_factory=list)

    @property
    def gpu_count(self) -> int:
        return len(self.nodes) * GPUS_PER_NODE


@dataclass
class Plan:
    """Everything `simulate` writes."""

    start: dt.datetime
    end: dt.datetime
    hostnames: list[str]
    racks: list[str]
    jobs: list[JobPlan]
    interruptions: list[Interruption]
    seed: int
    gpus: list[Accelerator] = field(default_factory=list)  # each node's GPU model
    fleet: str = "nvidia"

    def gpu_of(self, node: int) -> Accelerator:
        """The model of node `node`'s GPUs (H100 when the plan says none)."""
        return self.gpus[node] if self.gpus else H100

    def job_peak(self, job: JobPlan) -> float:
        """The mean dense BF16 peak of a job's GPUs (docs/formulas.md, MFU)."""
        peaks = [self.gpu_of(n).peak_tflops for n in job.nodes]
        if len(set(peaks)) == 1:
            return peaks[0]  # exactly the model's: a sum and a division would round
        return sum(peaks) / len(peaks)


def hostname(rack: int, slot: int, prefix: str = "") -> str:
    """Node names as racks of 16: r012n07 (mt-r012n07 with the prefix `mt-`)."""
    return f"{prefix}r{rack:03d}n{slot:02d}"


def make_plan(
    *,
    gpus: int,
    days: float,
    seed: int,
    end: dt.datetime,
    failure_rate: float | None = None,
    fleet: str = "nvidia",
    prefix: str = "",
) -> Plan:
    """Lay out nodes, a flagship job and lanes of smaller jobs, then draw interruptions.
    `fleet` is a vendor (its model on every node) or a mix (`mixed`, `mixed-mthreads`): the
    first half of the nodes H100, the rest MI300X (MTT S4000), and no job spans both
    (docs/simulator.md, Accelerators)."""
    rng = random.Random(seed)
    n_nodes = max(1, gpus // GPUS_PER_NODE)
    start = end - dt.timedelta(days=days)
    hostnames = [hostname(i // NODES_PER_RACK, i % NODES_PER_RACK, prefix) for i in range(n_nodes)]
    racks = [f"r{i // NODES_PER_RACK:03d}" for i in range(n_nodes)]
    models = fleet_models(fleet)
    if fleet in MIXES and n_nodes >= 2:
        half = (n_nodes + 1) // 2
        groups = [list(range(half)), list(range(half, n_nodes))]
        node_gpus = [models[0]] * half + [models[1]] * (n_nodes - half)
    else:
        groups = [list(range(n_nodes))]
        node_gpus = [models[0]] * n_nodes
    jobs = _jobs(rng, groups, start, end)
    rate = LLAMA3_RATE_PER_NODE_DAY if failure_rate is None else failure_rate
    interruptions = _interruptions(rng, n_nodes, start, end, rate, jobs)
    return Plan(start, end, hostnames, racks, jobs, interruptions, seed, node_gpus, fleet)


def _jobs(
    rng: random.Random, groups: list[list[int]], start: dt.datetime, end: dt.datetime
) -> list[JobPlan]:
    """A flagship on 75% of the first group of nodes, lanes of smaller jobs on the rest; no
    lane spans two groups (two GPU models)."""
    jobs: list[JobPlan] = []
    first = groups[0]
    n_first = len(first)
    flagship_nodes = max(1, int(n_first * 0.75)) if n_first >= 8 else n_first
    name, n_params, batch = FLAGSHIP
    jobs.append(
        JobPlan(
            index=0,
            name=f"{name}-pretrain",
            model=name,
            n_params=n_params,
            batch_tokens=batch,
            nodes=first[:flagship_nodes],
            start=start + dt.timedelta(minutes=30),
            end=None,
            status="running",
            mfu=rng.uniform(0.40, 0.46),
            checkpoint_every_s=1800,
            checkpoint_blocking_s=(4, 12),
        )
    )
    lanes: list[list[int]] = []
    for group_no, free in enumerate([first[flagship_nodes:], *groups[1:]]):
        group_lanes = 0
        while free:
            size = min(len(free), rng.choice((4, 8, 8, 16, 16, 32)))
            if len(lanes) >= 19 + group_no and group_lanes:
                lanes[-1].extend(free)
                break
            lanes.append(free[:size])
            group_lanes += 1
            free = free[size:]
    for lane_no, lane in enumerate(lanes):
        t = start + dt.timedelta(hours=rng.uniform(0, 6))
        while t < end:
            model, n_params, batch = rng.choice(MODELS)
            duration = dt.timedelta(days=rng.uniform(0.5, 5))
            job_end = t + duration
            status = rng.choices(("completed", "failed", "cancelled"), (70, 15, 15))[0]
            still_running = job_end >= end  # past the simulated span: no end yet
            if still_running:
                status = "running"
            jobs.append(
                JobPlan(
                    index=len(jobs),
                    name=f"{model}-lane{lane_no:02d}-{len(jobs):03d}",
                    model=model,
                    n_params=n_params,
                    batch_tokens=batch,
                    nodes=lane,
                    start=t,
                    end=None if still_running else job_end,
                    status=status,
                    mfu=rng.uniform(0.36, 0.52),
                    checkpoint_every_s=rng.choice((1200, 1800, 3600)),
                    checkpoint_blocking_s=(5, 40),
                )
            )
            if still_running:
                break
            t = job_end + dt.timedelta(hours=rng.uniform(0.2, 3))
    running = [j for j in jobs if j.status == "running"]
    if len(running) > 1:  # one small job hangs without an error 25 minutes before the end
        hung = running[-1]
        hung.hang_at = end - dt.timedelta(minutes=25)
        hung.hang_node = hung.nodes[rng.randrange(len(hung.nodes))]
    flagship = jobs[0]
    if len(flagship.nodes) >= 8:  # and one node of the flagship is a straggler
        flagship.slow_node = flagship.nodes[rng.randrange(len(flagship.nodes))]
    return jobs


def _job_at(jobs_by_node: dict[int, list[JobPlan]], node: int, t: dt.datetime) -> JobPlan | None:
    for job in jobs_by_node.get(node, ()):
        if job.start <= t and (job.end is None or t < job.end):
            return job
    return None


def _interruptions(
    rng: random.Random,
    n_nodes: int,
    start: dt.datetime,
    end: dt.datetime,
    rate: float,
    jobs: list[JobPlan],
) -> list[Interruption]:
    days = (end - start).total_seconds() / 86400
    expected = rate * n_nodes * days
    count = _poisson(rng, expected)
    categories, weights = weighted_categories()
    jobs_by_node: dict[int, list[JobPlan]] = {}
    for planned_job in jobs:
        for node in planned_job.nodes:
            jobs_by_node.setdefault(node, []).append(planned_job)
    draws = sorted(
        (
            start + dt.timedelta(seconds=rng.uniform(3600, (end - start).total_seconds() - 1800)),
            rng.randrange(n_nodes),
            rng.choices(categories, weights)[0],
        )
        for _ in range(count)
    )
    # Planned maintenance: one rack-sized window a week, announced, on idle or busy nodes.
    for week in range(int(days // 7)):
        at = start + dt.timedelta(days=7 * week + rng.uniform(2, 6))
        draws.append((at, rng.randrange(n_nodes), "planned"))
    draws.sort()
    node_busy_until: dict[int, dt.datetime] = {}
    job_busy_until: dict[int, dt.datetime] = {}
    out: list[Interruption] = []
    for at, node, category in draws:
        if node_busy_until.get(node, start) > at:
            continue  # a node that is already down cannot fail again
        job = _job_at(jobs_by_node, node, at)
        if (
            job is not None
            and job.hang_at is not None
            and at >= job.hang_at - dt.timedelta(hours=1)
        ):
            continue
        if job is not None and job_busy_until.get(job.index, start) > at:
            continue  # the job is already stopped: this failure folds into that one
        planned = category == "planned"
        item = _timed(rng, at, node, "host_maintenance" if planned else category, planned)
        if item.detected_at is not None and item.detected_at > end:
            continue  # not found yet: nothing knows of it
        if job is not None:
            item.job = job.index
            if not planned:
                _road(rng, item, job)
            if job.end is not None and item.recovered_at and item.recovered_at >= job.end:
                continue
            job.interruptions.append(item)
            job_busy_until[job.index] = item.recovered_at or end
        node_busy_until[node] = item.node_back_at or end
        out.append(item)
    return out


def _timed(
    rng: random.Random, at: dt.datetime, node: int, category: str, planned: bool
) -> Interruption:
    if planned:
        length = dt.timedelta(hours=rng.uniform(1.5, 3))
        return Interruption(
            at=at,
            category=category,
            node=node,
            planned=True,
            detected_at=at,
            localized_at=at,
            recovered_at=at + length,
            node_back_at=at + length,
            nodes=[node],
        )
    t = timing(category)
    detected = at + dt.timedelta(seconds=rng.uniform(*t.detect))
    localized = detected + dt.timedelta(seconds=rng.uniform(*t.localize))
    recovered = max(
        at + dt.timedelta(seconds=rng.uniform(*t.recover)),
        localized + dt.timedelta(seconds=rng.uniform(120, 600)),
    )
    repair = dt.timedelta(hours=rng.uniform(2, 30)) if category in HARDWARE else dt.timedelta(0)
    return Interruption(
        at=at,
        category=category,
        node=node,
        detected_at=detected,
        localized_at=localized,
        recovered_at=recovered,
        node_back_at=max(recovered, detected + repair),
        nodes=[node],
    )


def _road(rng: random.Random, item: Interruption, job: JobPlan) -> None:
    """Draw the road back of an unexpected interruption of `job` (docs/simulator.md, The
    road back): the drain of the blamed node at or shortly after localisation, the job's
    next attempt minutes later, its start-up, then the checkpoint's restore; training
    resumes (`recovered_at`) when the restore ends. A hardware fault's node is repaired
    while the job runs on a spare; any other's is checked and returned for the next attempt.
    The flagship, on three quarters of the
    nodes, starts up and loads its (405B, about 5.7 TB) checkpoint more slowly."""
    localized = item.localized_at or item.detected_at or item.at
    t = road_timing(flagship=job.index == 0)
    item.mitigated_at = localized + dt.timedelta(seconds=rng.uniform(*t.mitigate))
    item.restarted_at = item.mitigated_at + dt.timedelta(seconds=rng.uniform(*t.restart))
    item.loading_at = item.restarted_at + dt.timedelta(seconds=rng.uniform(*t.startup))
    item.restored_at = item.loading_at + dt.timedelta(seconds=rng.uniform(*t.restore))
    item.recovered_at = item.restored_at
    if item.category in HARDWARE:  # repaired while the job runs on a spare
        item.node_back_at = max(item.restored_at, item.node_back_at or item.restored_at)
    else:  # checked and returned: the next attempt runs on it again
        item.node_back_at = item.restarted_at


def _poisson(rng: random.Random, mean: float) -> int:
    """Poisson draw (normal approximation above 500, Knuth below)."""
    if mean > 500:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1
