"""Health benchmark (issue 4): a sweep of every kind, set-based, against node by node."""

from __future__ import annotations

import datetime as dt
import time

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.fleet.models import GPU, Cluster, Node
from apps.health import detectors as d
from apps.health.checks import SCHEDULED_KINDS, Limits
from apps.health.services import detect, limits_for, runs_execute_now
from apps.jobs.choices import JobStatus
from apps.jobs.models import Job, NodeStepMetric
from apps.telemetry.models import TelemetryEvent


def _node_by_node(cluster: Cluster, now: dt.datetime, limits: Limits) -> int:
    """The same detections with one query set per node: what set-based loading avoids."""
    findings = 0
    gpus_all: list[d.GpuLatest] = []
    timings: dict[int, dict[str, list[float]]] = {}
    jobs = list(Job.objects.filter(cluster=cluster, status=JobStatus.RUNNING))
    for node_id in Node.objects.filter(cluster=cluster).values_list("pk", flat=True):
        node = Node.objects.get(pk=node_id)
        seen = max((t for t in (node.last_seen_at, node.last_heartbeat_at) if t), default=None)
        findings += len(
            d.heartbeat(
                [d.NodeSeen(node.hostname, node.state, seen)],
                now=now,
                limits=limits,
                cluster=cluster.name,
            )
        )
        gpus = [
            d.GpuLatest(node.hostname, g.index, g.model, g.metrics, g.updated_at, g.probe_at)
            for g in GPU.objects.filter(node=node)
        ]
        gpus_all.extend(gpus)
        events = [
            d.GpuEvent(node.hostname, e.gpu, e.at, e.kind, e.value)
            for e in TelemetryEvent.objects.filter(
                node=node, recorded_at__gt=now - dt.timedelta(minutes=1)
            )
        ]
        findings += len(d.gpu_errors(events, gpus, limits=limits))
        findings += len(d.thermal(gpus, now=now, limits=limits))
        for job_id, compute in NodeStepMetric.objects.filter(
            node=node, job__in=jobs, ts__gte=now - dt.timedelta(minutes=30)
        ).values_list("job_id", "compute_s"):
            timings.setdefault(job_id, {}).setdefault(node.hostname, []).append(compute)
    findings += len(d.slow_node(timings, gpus_all, limits=limits))
    findings += len(d.sdc([], {j.pk: j.name for j in jobs}, gpus_all, limits=limits))
    return findings


def bench_health() -> None:
    """Print the sweep figures."""
    cluster = Cluster.objects.get(name="kuae-sim")
    running = Job.objects.filter(cluster=cluster, status=JobStatus.RUNNING).count()
    gpus = GPU.objects.filter(node__cluster=cluster).count()
    print(
        f"\nHealth sweep: {gpus:,} GPUs, {running} running jobs, kinds {', '.join(SCHEDULED_KINDS)}"
    )
    runs_execute_now(
        cluster=cluster, kinds=list(SCHEDULED_KINDS), requested_by="bench"
    )  # first: creates results
    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        runs = runs_execute_now(cluster=cluster, kinds=list(SCHEDULED_KINDS), requested_by="bench")
        sweep = time.perf_counter() - start
    per_kind = ", ".join(f"{r.kind} {r.duration_s * 1000:.0f} ms" for r in runs)
    print(
        f"  full sweep (detect + store results + outcomes): {sweep:.2f} s, {len(queries)} queries"
        f"   goal ≤ 2 s\n    {per_kind}"
    )
    now, limits = timezone.now(), limits_for(cluster)
    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        found = sum(len(detect(kind, cluster, now, limits)[0]) for kind in SCHEDULED_KINDS)
        set_based = time.perf_counter() - start
    set_queries = len(queries)
    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        found_nbn = _node_by_node(cluster, now, limits)
        nbn = time.perf_counter() - start
    print(
        f"  detection alone, set-based: {set_based:.2f} s, {set_queries} queries "
        f"({found:,} findings)\n  baseline, node by node:     {nbn:.2f} s, "
        f"{len(queries):,} queries ({found_nbn:,} findings)"
        f" → set-based is {nbn / set_based:.1f}× faster"
    )
