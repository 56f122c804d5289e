"""The live demo: keeps a simulated cluster running while `make run` is up.

Every tick (15 s, Celery beat, only with KUAE_DEMO=1), for every simulated cluster — the
NVIDIA one and the small Moore Threads one `demo_setup` writes: heartbeats, fresh GPU telemetry,
job progress and checkpoints through the same services the API uses, a new reading of every
NIC port where the cluster has ports (apps/simulator/nics.py) and of every node's host
(apps/simulator/host.py), and now and then a fault for the health checks to find — a node
that goes silent, an XID, a hot GPU — and, on schedules of their own, a flapping link or a
link that goes down, and a host fault (`HOST_FAULTS`). A job
that has made no progress for 10 minutes is left hung: that is a fault too, and its ranks'
watchdogs keep re-reporting the stall every 5 minutes (apps/simulator/ranks.py).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.conf import settings
from django.db.models import Avg
from django.utils import timezone

from apps.fleet.choices import NodeState
from apps.fleet.models import GPU, Cluster, Node
from apps.fleet.services import nodes_touch_bulk
from apps.jobs.choices import JobStatus
from apps.jobs.intake import MetricSample
from apps.jobs.models import Job, JobMetric
from apps.jobs.services import checkpoint_record, job_metrics_ingest
from apps.simulator.host import HOST_FAULTS, HOST_FAULTS_BY_SLUG, Placed, host_readings
from apps.simulator.nics import PORTS_PER_NODE, port_readings
from apps.simulator.ranks import stalls_renew
from apps.simulator.series import loss_at
from apps.telemetry.host import HostReadingIn
from apps.telemetry.intake import TelemetrySample
from apps.telemetry.models import HostReading, Port
from apps.telemetry.ports import PortReading
from apps.telemetry.services import telemetry_batch_ingest

INTERVAL_S = 60
HUNG_AFTER = dt.timedelta(minutes=10)
CHECKPOINT_EVERY = dt.timedelta(minutes=30)
FAULT_CHANCE = 1 / 60  # per tick: about one node or GPU fault every 15 minutes
FAULT_LENGTH = dt.timedelta(minutes=8)
FLAP_LENGTH = dt.timedelta(minutes=1)  # a burst: the check warns once or twice, not more
GPU_FAULTS = ("xid", "hot")
PORT_FAULTS = ("flap", "linkdown")  # only on a cluster with NIC ports
# A cluster with NIC ports gets a port fault on a seeded schedule, not by chance, so the fabric
# check and the Topology page show one soon after `make run` and then now and then: the first
# 2–4 minutes after the demo's first tick, each next one 15–30 minutes after the last.
PORT_FIRST_MIN = (2.0, 4.0)
PORT_EVERY_MIN = (15.0, 30.0)
# And every cluster with host readings a host fault (apps/simulator/host.py, HOST_FAULTS), on
# a seeded schedule too: the first 3–6 minutes after the first tick, each next 20–40 minutes
# after the last, the table's kinds in turn from a seeded start; one held lasts FAULT_LENGTH.
HOST_FIRST_MIN = (3.0, 6.0)
HOST_EVERY_MIN = (20.0, 40.0)


@dataclass
class Fault:
    """A live fault: what, where (a node; the GPU's or, for a port fault, the port's index),
    until when."""

    kind: str
    hostname: str
    gpu: int
    until: str


@dataclass
class DemoState:
    """What the demo remembers between ticks (a small JSON file under var/)."""

    faults: list[Fault] = field(default_factory=list)
    slow: dict[str, str] = field(default_factory=dict)
    # cluster name → [when its next port fault is due (ISO), how many it has had]
    ports: dict[str, list[str | int]] = field(default_factory=dict)
    # cluster name → [when its next host fault is due (ISO), how many it has had]
    host: dict[str, list[str | int]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> DemoState:
        try:
            raw = json.loads(path.read_text())
        except (OSError, ValueError):
            return cls()
        return cls(
            [Fault(**f) for f in raw.get("faults", [])],
            raw.get("slow", {}),
            raw.get("ports", {}),
            raw.get("host", {}),
        )

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        faults = [asdict(f) for f in self.faults]
        body = {"faults": faults, "slow": self.slow, "ports": self.ports, "host": self.host}
        tmp.write_text(json.dumps(body))
        tmp.replace(path)


def state_path() -> Path:
    """Where the demo keeps its state."""
    return Path(settings.VAR_DIR) / "demo-state.json"


def demo_tick(
    *, now: dt.datetime | None = None, rng: random.Random | None = None
) -> dict[str, int]:
    """Advance every simulated cluster to `now`; returns counts of what was written."""
    now = now or timezone.now()
    rng = rng or random.Random()
    path = state_path()
    state = DemoState.load(path)
    state.faults = [f for f in state.faults if dt.datetime.fromisoformat(f.until) > now]
    counts = {"samples": 0, "gpus": 0, "ports": 0, "host": 0, "nodes": 0, "stalls": 0}
    for cluster in Cluster.objects.filter(simulated=True):
        _maybe_fault(cluster, state, now, rng)
        port_fault_due(cluster, state, now)
        raised = host_fault_due(cluster, state, now)
        counts["nodes"] += _heartbeats(cluster, state, now)
        samples = _telemetry(cluster, state, now, rng)
        readings = _ports(cluster, state, now, rng)
        host = _host(cluster, state, now, rng, raised)
        if samples or readings or host:
            telemetry_batch_ingest(samples=samples, readings=readings, host=host, now=now)
        counts["gpus"] += len(samples)
        counts["ports"] += len(readings)
        counts["host"] += len(host)
        counts["samples"] += _progress(cluster, state, now, rng)
        counts["stalls"] += _stalls(cluster, now)
    state.save(path)
    return counts


def _silent(state: DemoState) -> set[str]:
    return {f.hostname for f in state.faults if f.kind == "silent"}


def _maybe_fault(cluster: Cluster, state: DemoState, now: dt.datetime, rng: random.Random) -> None:
    if rng.random() >= FAULT_CHANCE:
        return
    hosts = list(
        Node.objects.filter(cluster=cluster, state=NodeState.HEALTHY).values_list(
            "hostname", flat=True
        )
    )
    if not hosts:
        return
    kind = rng.choice(("silent", *GPU_FAULTS))
    hostname = rng.choice(hosts)
    where = rng.randrange(cluster.gpus_per_node)
    state.faults.append(Fault(kind, hostname, where, (now + FAULT_LENGTH).isoformat()))


def _schedule(cluster: Cluster, n: int) -> random.Random:
    """The seeded draws of a cluster's `n`th port fault (0: when the first comes)."""
    return random.Random(f"port-faults/{cluster.name}/{n}")


def _fault_turn(
    cluster: Cluster,
    state: DemoState,
    cursors: dict[str, list[str | int]],
    first: random.Random,
    first_min: tuple[float, float],
    now: dt.datetime,
) -> tuple[int, list[str]] | None:
    """Whether a kind of fault of the cluster is due (`cursors`: the cluster's next due time
    and the number of faults raised so far): (that number, the healthy nodes not silenced)
    when it is; None when it is not, or no node can take it (tried again next tick). The
    first tick only schedules the first fault, `first_min` minutes away (drawn from `first`)."""
    due, n = cursors.get(cluster.name, ("", 0))
    if not due:
        cursors[cluster.name] = [
            (now + dt.timedelta(minutes=first.uniform(*first_min))).isoformat(),
            0,
        ]
        return None
    if now < dt.datetime.fromisoformat(str(due)):
        return None
    hosts = sorted(
        Node.objects.filter(cluster=cluster, state=NodeState.HEALTHY)
        .exclude(hostname__in=_silent(state))
        .values_list("hostname", flat=True)
    )
    return (int(n), hosts) if hosts else None


def port_fault_due(cluster: Cluster, state: DemoState, now: dt.datetime) -> Fault | None:
    """Raise the cluster's next port fault when it is due (docs/simulator.md, The demo): a
    flapping link or a link that goes down, on a healthy node's port, drawn from a seed of
    the cluster's name and the fault's number; the first is scheduled on the first tick.
    Returns the fault raised, None when none (or the cluster has no ports)."""
    if not Port.objects.filter(node__cluster=cluster).exists():
        return None
    turn = _fault_turn(cluster, state, state.ports, _schedule(cluster, 0), PORT_FIRST_MIN, now)
    if turn is None:
        return None
    n, hosts = turn
    draw = _schedule(cluster, n + 1)
    kind = draw.choice(PORT_FAULTS)
    until = now + (FLAP_LENGTH if kind == "flap" else FAULT_LENGTH)
    fault = Fault(kind, draw.choice(hosts), draw.randrange(PORTS_PER_NODE), until.isoformat())
    state.faults.append(fault)
    after = dt.timedelta(minutes=draw.uniform(*PORT_EVERY_MIN))
    state.ports[cluster.name] = [(now + after).isoformat(), n + 1]
    return fault


def _host_schedule(cluster: Cluster, n: int) -> random.Random:
    """The seeded draws of a cluster's `n`th host fault (0: when the first comes, and the
    kind the turn of kinds starts from)."""
    return random.Random(f"host-faults/{cluster.name}/{n}")


def host_fault_due(cluster: Cluster, state: DemoState, now: dt.datetime) -> Fault | None:
    """Raise the cluster's next host fault when it is due (docs/simulator.md, Host
    readings): the next kind of `HOST_FAULTS` in turn, on a healthy reporting node and one of
    its subjects, drawn from a seed of the cluster's name and the fault's number; the first
    is scheduled on the first tick. A counter's fault is held a minute (its counter grows
    once, on this tick), another FAULT_LENGTH. Returns the fault raised, None when none (or
    the cluster has no host readings)."""
    if not HostReading.objects.filter(node__cluster=cluster).exists():
        return None
    first = _host_schedule(cluster, 0)
    turn = _fault_turn(cluster, state, state.host, first, HOST_FIRST_MIN, now)
    if turn is None:
        return None
    n, hosts = turn
    start = _host_schedule(cluster, 0).randrange(len(HOST_FAULTS))
    kind = HOST_FAULTS[(start + n) % len(HOST_FAULTS)]
    draw = _host_schedule(cluster, n + 1)
    until = now + (FLAP_LENGTH if kind.once else FAULT_LENGTH)
    fault = Fault(kind.slug, draw.choice(hosts), draw.randrange(kind.devices), until.isoformat())
    state.faults.append(fault)
    after = dt.timedelta(minutes=draw.uniform(*HOST_EVERY_MIN))
    state.host[cluster.name] = [(now + after).isoformat(), n + 1]
    return fault


def _placed(fault: Fault) -> Placed:
    kind = HOST_FAULTS_BY_SLUG[fault.kind]
    return Placed(kind, fault.hostname, kind.subject(fault.gpu))


def _host(
    cluster: Cluster,
    state: DemoState,
    now: dt.datetime,
    rng: random.Random,
    raised: Fault | None,
) -> list[HostReadingIn]:
    """A new reading of each of the cluster's host subjects, with the host faults under way
    held and the one raised this tick (if any) applied."""
    held = [
        _placed(f)
        for f in state.faults
        if f.kind in HOST_FAULTS_BY_SLUG and not HOST_FAULTS_BY_SLUG[f.kind].once
    ]
    bumps = [_placed(raised)] if raised is not None else []
    return host_readings(
        cluster=cluster, now=now, rng=rng, silent=_silent(state), held=held, raised=bumps
    )


def _heartbeats(cluster: Cluster, state: DemoState, now: dt.datetime) -> int:
    silent = _silent(state)
    ids = (
        Node.objects.filter(cluster=cluster)
        .exclude(state=NodeState.DOWN)
        .exclude(hostname__in=silent)
        .values_list("pk", flat=True)
    )
    rows = [(pk, now, now) for pk in ids]
    nodes_touch_bulk(rows=rows)
    return len(rows)


def _telemetry(
    cluster: Cluster, state: DemoState, now: dt.datetime, rng: random.Random
) -> list[TelemetrySample]:
    silent = _silent(state)
    faults = {(f.hostname, f.gpu): f.kind for f in state.faults if f.kind in GPU_FAULTS}
    samples = []
    for hostname, index, vendor, model, metrics in GPU.objects.filter(
        node__cluster=cluster
    ).values_list("node__hostname", "index", "vendor", "model", "metrics"):
        if hostname in silent or not metrics:
            continue
        m = dict(metrics)
        busy = m.get("gpu_util", 0) > 50
        m["temp_c"] = round(min(85, max(30, m.get("temp_c", 60) + rng.gauss(0, 0.8))))
        m["power_w"] = round(max(60, m.get("power_w", 500) + rng.gauss(0, 8 if busy else 1)), 1)
        m["gpu_util"] = round(min(100, max(0, m.get("gpu_util", 0) + rng.gauss(0, 1))))
        if "xid" in m:  # dcgm-exporter's; other vendors' ways in report no XID
            m["xid"] = 0
        if busy and "nvlink_bw_total" in m:
            m["nvlink_bw_total"] = int(m["nvlink_bw_total"] + rng.uniform(2e11, 4e11) * 15)
        kind = faults.get((hostname, index))
        if kind == "xid" and "xid" in m:
            m["xid"] = 79
        elif kind is not None:  # hot; an XID on a GPU without XIDs
            m["temp_c"] = 92
        if "temp_junction_c" in m:  # the exporter's temp_c is its junction temperature
            m["temp_junction_c"] = m["temp_c"]
        samples.append(TelemetrySample(hostname, index, now, m, model=model, vendor=vendor))
    return samples


def _ports(
    cluster: Cluster, state: DemoState, now: dt.datetime, rng: random.Random
) -> list[PortReading]:
    """A new reading of each of the cluster's NIC ports (none where it has none)."""
    by_kind: dict[str, set[tuple[str, int]]] = {kind: set() for kind in PORT_FAULTS}
    for f in state.faults:
        if f.kind in by_kind:
            by_kind[f.kind].add((f.hostname, f.gpu))
    return port_readings(
        cluster=cluster,
        now=now,
        rng=rng,
        silent=_silent(state),
        flapping=by_kind["flap"],
        down=by_kind["linkdown"],
    )


def _stalls(cluster: Cluster, now: dt.datetime) -> int:
    """The hung jobs' ranks keep reporting their stall."""
    hung = Job.objects.filter(
        cluster=cluster, status=JobStatus.RUNNING, last_metric_at__lt=now - HUNG_AFTER
    )
    return stalls_renew(jobs=list(hung), now=now)


def _progress(cluster: Cluster, state: DemoState, now: dt.datetime, rng: random.Random) -> int:
    written = 0
    silent = _silent(state)
    for job in Job.objects.filter(cluster=cluster, status=JobStatus.RUNNING).select_related(
        "cluster"
    ):
        if job.last_metric_at is None or now - job.last_metric_at > HUNG_AFTER:
            continue  # hung: left for the job_hang check to find
        base = JobMetric.objects.filter(job=job, ts__gte=now - dt.timedelta(hours=1)).aggregate(
            tps=Avg("tokens_per_s"), st=Avg("step_time_s")
        )
        tps0, st0 = base["tps"] or job.last_tokens_per_s or 1.0, base["st"] or 10.0
        hosts = list(job.nodes.values_list("hostname", flat=True))
        if str(job.pk) not in state.slow and len(hosts) >= 8 and job.gpu_count >= 1024:
            state.slow[str(job.pk)] = rng.choice(hosts)
        samples: list[MetricSample] = []
        t = job.last_metric_at + dt.timedelta(seconds=INTERVAL_S)
        step = job.last_step or 0
        while t <= now:
            tps = tps0 * (1 + rng.gauss(0, 0.012))
            st = st0 * tps0 / tps
            step += max(1, round(INTERVAL_S / st))
            samples.append(
                MetricSample(
                    t,
                    step,
                    round(st, 4),
                    round(tps, 1),
                    loss_at(step * tps0 * st0, rng),
                    abs(rng.gauss(0.6, 0.15)),
                    None,
                    None,
                )
            )
            for host in hosts:
                if host in silent:
                    continue
                slow = 1.18 if state.slow.get(str(job.pk)) == host else 1.0
                samples.append(
                    MetricSample(
                        t,
                        step,
                        round(st, 4),
                        None,
                        None,
                        None,
                        host,
                        round(st * 0.82 * slow * (1 + rng.gauss(0, 0.008)), 4),
                    )
                )
            t += dt.timedelta(seconds=INTERVAL_S)
        if samples:
            written += job_metrics_ingest(job=job, samples=samples)
        if job.last_checkpoint_at is None or now - job.last_checkpoint_at >= CHECKPOINT_EVERY:
            checkpoint_record(
                job=job, step=step, saved_at=now, blocking_s=round(rng.uniform(4, 12), 2)
            )
    return written
