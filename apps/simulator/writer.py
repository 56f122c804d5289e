"""Writes a plan through the same services the API uses."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable

from django.db import transaction

from apps.fleet.choices import NodeState, StateSource
from apps.fleet.models import GPU, Cluster, Node, NodeStateChange
from apps.fleet.services import (
    NodeSpec,
    cluster_create,
    node_set_state,
    nodes_register,
    nodes_touch_bulk,
)
from apps.incidents.choices import Category, IncidentStatus, Source
from apps.incidents.models import Incident
from apps.incidents.services import incident_open
from apps.jobs.models import Checkpoint, Job, JobMetric, JobPhase, NodeStepMetric
from apps.jobs.services import (
    checkpoints_record_bulk,
    job_create,
    job_metrics_ingest,
    job_phases_record,
)
from apps.simulator.accelerators import MIXES
from apps.simulator.gpus import GpuCounters, gpu_metrics, gpu_uuid
from apps.simulator.host import REQUIRED_MOUNTS, node_first_readings
from apps.simulator.mix import HARDWARE, XID_BY_CATEGORY
from apps.simulator.plan import GPUS_PER_NODE, Interruption, Plan
from apps.simulator.ranks import hung_ranks_write
from apps.simulator.series import Restart, job_series, node_timings
from apps.telemetry.host import HostReadingIn
from apps.telemetry.intake import TelemetrySample
from apps.telemetry.models import HostReading
from apps.telemetry.services import host_ingest, telemetry_ingest

CHUNK = 50_000
HISTORY_STEPS = 24  # two hours of 5-minute telemetry
Log = Callable[[str], None]


def cluster_wipe(cluster: Cluster) -> None:
    """Delete a simulated cluster and everything under it, with set-based deletes."""
    jobs = Job.objects.filter(cluster=cluster)
    JobMetric.objects.filter(job__in=jobs).delete()
    NodeStepMetric.objects.filter(job__in=jobs).delete()
    Checkpoint.objects.filter(job__in=jobs).delete()
    JobPhase.objects.filter(job__in=jobs).delete()
    Incident.nodes.through.objects.filter(incident__cluster=cluster).delete()
    Incident.objects.filter(cluster=cluster).delete()
    Job.nodes.through.objects.filter(job__in=jobs).delete()
    jobs.delete()
    nodes = Node.objects.filter(cluster=cluster)
    HostReading.objects.filter(node__in=nodes).delete()
    GPU.objects.filter(node__in=nodes).delete()
    NodeStateChange.objects.filter(node__in=nodes).delete()
    nodes.delete()
    cluster.delete()


def write_plan(
    plan: Plan,
    *,
    cluster_name: str,
    interval_s: float,
    log: Log,
    telemetry_steps: int = HISTORY_STEPS,
) -> Cluster:
    """Create the cluster, nodes, jobs with metrics and checkpoints, incidents, node states,
    latest telemetry and heartbeats. Each GPU gets `telemetry_steps` 5-minute samples before
    its latest one (0: the latest alone, as a large fleet built for a benchmark needs)."""
    first = plan.gpu_of(0)
    models = {g.model: g.peak_tflops for g in plan.gpus} if plan.fleet in MIXES else {}
    with transaction.atomic():
        cluster = cluster_create(
            name=cluster_name,
            gpu_model=first.cluster_model,
            peak_tflops_per_gpu=first.peak_tflops,
            gpus_per_node=GPUS_PER_NODE,
            simulated=True,
            # A cluster of several models names each one's peak (docs/formulas.md, MFU).
            peak_tflops_by_model=models,
        )
        cluster.required_mounts = REQUIRED_MOUNTS
        cluster.save(update_fields=["required_mounts"])
        nodes = nodes_register(
            cluster=cluster,
            specs=[
                # One leaf switch per rack and two PDUs (upper and lower half), so the
                # Topology page and blast-radius incidents have something to show.
                NodeSpec(
                    hostname=h,
                    rack=r,
                    switch=f"leaf-{r[1:]}",
                    pdu=f"pdu-{r[1:]}{'ab'[(i // 8) % 2]}",
                    in_service_at=plan.start,
                )
                for i, (h, r) in enumerate(zip(plan.hostnames, plan.racks, strict=True))
            ],
        )
    log(f"{len(nodes)} nodes, {len(nodes) * GPUS_PER_NODE} GPUs")
    restarts: dict[int, list[Restart]] = {}
    jobs = _write_jobs(plan, cluster, nodes, interval_s, log, restarts)
    _write_interruptions(plan, cluster, nodes, jobs, restarts, log)
    _write_live_state(plan, nodes, log, telemetry_steps)
    return cluster


def _write_jobs(
    plan: Plan,
    cluster: Cluster,
    nodes: list[Node],
    interval_s: float,
    log: Log,
    restarts: dict[int, list[Restart]],
) -> dict[int, Job]:
    """Each planned job with its step samples, checkpoints and phases (and, running, its
    recent per-node timings; hung, its ranks' stall reports). Fills `restarts`: job index →
    how each of its restarts went, which its incidents' road back needs."""
    jobs: dict[int, Job] = {}
    total = phases = 0
    for jp in plan.jobs:
        series = job_series(
            jp, until=plan.end, interval_s=interval_s, seed=plan.seed, peak=plan.job_peak(jp)
        )
        samples, checkpoints = series.samples, series.checkpoints
        restarts[jp.index] = series.restarts
        with transaction.atomic():
            job, _ = job_create(
                cluster=cluster,
                nodes=[nodes[i] for i in jp.nodes],
                name=jp.name,
                external_id=f"sim-{jp.index}",
                model_name=jp.model,
                n_params=jp.n_params,
                gpu_count=jp.gpu_count,
                status=jp.status,
                started_at=jp.start,
                ended_at=jp.end,
                restart_count=sum(
                    1
                    for i in jp.interruptions
                    if not i.planned and i.restarted_at is not None and i.restarted_at <= plan.end
                ),
            )
        for start in range(0, len(samples), CHUNK):
            job_metrics_ingest(job=job, samples=samples[start : start + CHUNK])
        checkpoints_record_bulk(
            job=job,
            items=[
                (c.step, c.saved_at, round(c.blocking_s, 2), int(jp.n_params * 14))
                for c in checkpoints
            ],
        )
        if series.phases:
            phases += job_phases_record(job=job, phases=series.phases)
        if jp.status == "running" and samples:
            timings = list(node_timings(jp, plan.hostnames, samples[-20:], plan.seed))
            for start in range(0, len(timings), CHUNK):
                job_metrics_ingest(job=job, samples=timings[start : start + CHUNK])
        if jp.status == "running" and jp.hang_at is not None and jp.hang_node is not None:
            hosts = [plan.hostnames[i] for i in jp.nodes]
            stalls = hung_ranks_write(
                job=job,
                hosts=hosts,
                culprit_host=plan.hostnames[jp.hang_node],
                gpus_per_node=GPUS_PER_NODE,
                hang_at=jp.hang_at,
                step=samples[-1].step if samples else 0,
                now=plan.end,
                # the ranks' processes began with the job's latest attempt
                started_at=max(
                    (
                        i.restarted_at
                        for i in jp.interruptions
                        if i.restarted_at is not None and i.restarted_at < jp.hang_at
                    ),
                    default=jp.start,
                ),
            )
            log(f"{job.name}: {len(hosts) * GPUS_PER_NODE} ranks, {stalls:,} stall reports")
        total += len(samples)
        jobs[jp.index] = job
    log(f"{len(jobs)} jobs, {total:,} step samples, {phases:,} phases")
    return jobs


def _write_interruptions(
    plan: Plan,
    cluster: Cluster,
    nodes: list[Node],
    jobs: dict[int, Job],
    restarts: dict[int, list[Restart]],
    log: Log,
) -> None:
    """An incident for each interruption — an unexpected one of a job with its road back
    (docs/simulator.md, The road back) — and the node state changes they caused."""
    rng = random.Random(plan.seed * 31 + 7)
    recent = plan.end - dt.timedelta(days=2)
    by_item = {id(r.item): r for job_restarts in restarts.values() for r in job_restarts}
    changes: list[tuple[dt.datetime, int, str, str]] = []
    for item in plan.interruptions:
        node = nodes[item.node]
        job = jobs.get(item.job) if item.job is not None else None
        label = Category(item.category).label
        # An XID is NVIDIA's word for a GPU error (its driver's): another vendor's GPU
        # reports none, so its incident names none.
        xid = (
            XID_BY_CATEGORY.get(item.category)
            if plan.gpu_of(item.node).vendor == "nvidia"
            else None
        )
        title = f"{label} on {node.hostname}" + (f" (XID {xid})" if xid else "")
        if item.planned:
            title = f"Planned maintenance on {node.hostname}"
        # What has not happened by the end of the history is not known yet.
        recovered = _by(item.recovered_at, plan.end)
        restart = by_item.get(id(item))
        # A restart with no checkpoint to load starts over from step 0: nothing restored.
        restored = item.restored_at if restart is None or restart.step is not None else None
        old = recovered is not None and recovered < recent
        status = (
            rng.choice((IncidentStatus.RESOLVED, IncidentStatus.CLOSED))
            if old
            else rng.choice(
                (IncidentStatus.OPEN, IncidentStatus.INVESTIGATING, IncidentStatus.MITIGATED)
            )
        )
        incident_open(
            cluster=cluster,
            title=title,
            category=item.category,
            severity=_severity(item, job),
            status=status,
            occurred_at=item.at,
            detected_at=item.detected_at or item.at,
            localized_at=_by(item.localized_at, plan.end),
            mitigated_at=_by(item.mitigated_at, plan.end),
            restarted_at=_by(item.restarted_at, plan.end),
            restored_at=_by(restored, plan.end),
            recovered_at=recovered,
            caught_up_at=restart.caught_up_at if restart is not None else None,
            resolved_at=(recovered + dt.timedelta(hours=rng.uniform(1, 40)))
            if old and recovered
            else None,
            job=job,
            nodes=[node],
            interrupts_job=job is not None,
            planned=item.planned,
            source=Source.SIMULATOR,
        )
        changes.extend(_state_changes(item, plan.end))
    for at, node_index, state, reason in sorted(changes):
        if at <= plan.end:
            node_set_state(
                node=nodes[node_index],
                state=state,
                reason=reason,
                at=at,
                source=StateSource.SIMULATOR,
            )
    log(f"{len(plan.interruptions)} interruptions, {len(changes)} node state changes")


def _by(at: dt.datetime | None, end: dt.datetime) -> dt.datetime | None:
    """`at` if it came by `end`, else None (still to come)."""
    return at if at is not None and at <= end else None


def _severity(item: Interruption, job: Job | None) -> str:
    if item.planned:
        return "sev4"
    if item.category == "hang":
        return "sev1"
    return "sev2" if job is not None else "sev3"


# Faults that take the whole host down (it stops answering), not one of its parts.
HOST_DOWN = frozenset({"power_supply", "chassis", "cpu", "host_memory", "io_expansion_board"})


def _state_changes(
    item: Interruption, end: dt.datetime
) -> list[tuple[dt.datetime, int, NodeState, str]]:
    if item.planned:
        return [
            (item.at, item.node, NodeState.MAINTENANCE, "planned maintenance"),
            (item.node_back_at or end, item.node, NodeState.HEALTHY, "maintenance done"),
        ]
    back = item.node_back_at or end
    if item.mitigated_at is not None:
        # A job's interruption: its first change is the mitigation — the blamed node
        # drained (marked down where the whole host went down) at `mitigated_at` — so the
        # node's history and the incident's road back agree.
        drained = item.mitigated_at
        out = [
            (
                drained,
                item.node,
                NodeState.DOWN if item.category in HOST_DOWN else NodeState.DRAINED,
                f"{item.category}: drained by simulator",
            )
        ]
        if item.category in HOST_DOWN and back > (item.recovered_at or drained):
            out.append(
                (
                    item.recovered_at or drained,
                    item.node,
                    NodeState.DRAINED,
                    f"{item.category}: awaiting repair",
                )
            )
        returned = "repaired and returned" if item.category in HARDWARE else "checked and returned"
        out.append((back, item.node, NodeState.HEALTHY, returned))
        return out
    detected = item.detected_at or item.at
    out = [(detected, item.node, NodeState.DOWN, f"{item.category}: detected by simulator")]
    if back > (item.recovered_at or detected):
        out.append(
            (
                item.recovered_at or detected,
                item.node,
                NodeState.DRAINED,
                f"{item.category}: awaiting repair",
            )
        )
    out.append(
        (
            back,
            item.node,
            NodeState.HEALTHY,
            "repaired and returned" if back > detected else "recovered",
        )
    )
    return out


def _write_live_state(plan: Plan, nodes: list[Node], log: Log, steps: int) -> None:
    """GPU telemetry through the telemetry intake — the latest sample and `steps` 5-minute
    steps before it (two hours by default, so charts have rollups) — and each node's host
    readings through its host write (apps/simulator/host.py), then heartbeats. Nodes that
    are down went silent when they failed."""
    rng = random.Random(plan.seed * 17 + 3)
    busy = {n for jp in plan.jobs if jp.status == "running" for n in jp.nodes}
    slow = {jp.slow_node for jp in plan.jobs if jp.slow_node is not None}
    current = dict(Node.objects.filter(pk__in=[n.pk for n in nodes]).values_list("pk", "state"))
    changed = dict(
        Node.objects.filter(pk__in=[n.pk for n in nodes]).values_list("pk", "state_changed_at")
    )
    hot = rng.randrange(len(nodes))
    touches = []
    total = hosts = 0
    for start in range(0, len(nodes), 128):
        samples: list[TelemetrySample] = []
        host: list[HostReadingIn] = []
        for i in range(start, min(start + 128, len(nodes))):
            node = nodes[i]
            down = current[node.pk] == NodeState.DOWN
            last = changed[node.pk] - dt.timedelta(seconds=30) if down else plan.end
            counters = [GpuCounters.start(rng) for _ in range(node.gpu_count)]
            uuids = [gpu_uuid(plan.seed, node.hostname, g) for g in range(node.gpu_count)]
            working = i in busy and not down
            gpu = plan.gpu_of(i)
            host += node_first_readings(node.hostname, ts=last, seed=plan.seed, gpus=node.gpu_count)
            for step in range(steps, -1, -1):
                ts = last - dt.timedelta(minutes=5 * step, seconds=rng.uniform(0, 15))
                if ts < plan.start:
                    continue
                for g in range(node.gpu_count):
                    counters[g].advance(rng, busy=working, seconds=300)
                    scale = 0.86 if (i in slow and g == 3) else 1.0
                    metrics = gpu_metrics(
                        rng, busy=working, counters=counters[g], gemm_scale=scale, gpu=gpu
                    )
                    if i == hot and g == 5 and step == 0:
                        metrics["temp_c"] = 91
                        if "temp_junction_c" in metrics:
                            metrics["temp_junction_c"] = 91
                    samples.append(
                        TelemetrySample(
                            node.hostname, g, ts, metrics, uuids[g], gpu.model, vendor=gpu.vendor
                        )
                    )
            seen = plan.end - dt.timedelta(seconds=rng.uniform(0, 20)) if not down else last
            touches.append((node.pk, seen, seen))
        telemetry_ingest(samples=samples, now=plan.end)
        host_ingest(readings=host, now=plan.end, seen=False)  # the heartbeats come below
        total += len(samples)
        hosts += len(host)
    with transaction.atomic():
        nodes_touch_bulk(rows=touches)
    log(f"{total:,} telemetry samples for {len(nodes) * GPUS_PER_NODE:,} GPUs")
    log(f"{hosts:,} host readings")
