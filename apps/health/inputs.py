"""What the detectors need for one cluster, loaded in a few set-based queries."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

import orjson
from django.db.models import Count, Q
from django.db.models.fields.json import KT

from apps.common.dbfuncs import Epoch, from_epoch
from apps.fleet.choices import NodeState
from apps.fleet.models import GPU, Cluster, Node
from apps.health.blast import KINDS, Place
from apps.health.choices import RunStatus
from apps.health.detectors import (
    FabricPort,
    GpuEvent,
    GpuLatest,
    JobProgress,
    NodeGpus,
    NodeSeen,
    NonFinite,
)
from apps.health.models import CheckResult, CheckRun
from apps.jobs.models import Job, JobMetric, NodeStepMetric
from apps.jobs.selectors import job_step_times
from apps.jobs.selectors import running_jobs as jobs_running
from apps.telemetry.models import Port, TelemetryEvent

# Per-node timings older than this are not "recent" for the slow-node check.
TIMING_WINDOW = dt.timedelta(minutes=30)
# The first run of an event-driven check looks this far back.
FIRST_WINDOW = dt.timedelta(minutes=10)
IN_SERVICE = (NodeState.HEALTHY, NodeState.SUSPECT)


def nodes_seen(cluster: Cluster) -> list[NodeSeen]:
    """Every node's state and latest sign of life (heartbeat, telemetry or metric)."""
    out = []
    for hostname, state, seen, beat in Node.objects.filter(cluster=cluster).values_list(
        "hostname", "state", "last_seen_at", "last_heartbeat_at"
    ):
        latest = max((t for t in (seen, beat) if t is not None), default=None)
        out.append(NodeSeen(hostname, state, latest))
    return out


def places(cluster: Cluster) -> dict[str, Place]:
    """hostname → where it sits, for the cluster's nodes with a switch, PDU or NVLink
    domain (docs/checks.md, Blast radius)."""
    return {
        h: Place(switch, pdu, nvl)
        for h, switch, pdu, nvl in Node.objects.filter(cluster=cluster)
        .exclude(switch="", pdu="", nvlink_domain="")
        .values_list("hostname", *KINDS)
    }


def running_jobs(cluster: Cluster) -> list[Job]:
    """The cluster's running jobs, largest first."""
    return jobs_running(cluster_id=cluster.pk)


def job_progress(jobs: list[Job], window: int) -> list[JobProgress]:
    """Each running job's progress (kept on the job at intake) and the step times of its
    newest `window` samples: job-wide ones through the (job, ts) index, else — for a job
    whose ranks report only per node — its per-node samples near its progress."""
    out = []
    for job in jobs:
        times = job_step_times(job, window)  # the jobs app's reading, oldest first
        out.append(
            JobProgress(job.pk, job.name, job.started_at, job.progress_at, job.progress_step, times)
        )
    return out


def node_timings(jobs: list[Job], now: dt.datetime) -> dict[int, dict[str, list[float]]]:
    """job → hostname → recent compute times, oldest first, in one query."""
    out: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    rows = (
        NodeStepMetric.objects.filter(
            job__in=jobs, ts__gte=now - TIMING_WINDOW, compute_s__isnull=False
        )
        .order_by("ts")
        .values_list("job_id", "node__hostname", "compute_s")
    )
    for job_id, hostname, compute in rows:
        if compute is not None:  # the filter's promise, which the types cannot see
            out[job_id][hostname].append(compute)
    return out


def gpus_latest(cluster: Cluster, keys: tuple[str, ...] = ()) -> list[GpuLatest]:
    """Every GPU's latest values of the metrics named, and when they arrived. The values are
    read out of the JSON in SQL as text and the times as Unix seconds: at 100,000 GPUs,
    shipping each GPU's whole document or parsing each timestamp's text took most of a
    check's time."""
    columns = [KT(f"metrics__{k}") for k in keys]
    rows = GPU.objects.filter(node__cluster=cluster).values_list(
        "node__hostname",
        "index",
        "model",
        Epoch("updated_at"),
        Epoch("probe_at"),
        "source",
        *columns,
    )
    return [
        GpuLatest(
            hostname,
            index,
            # docs/pages.md, Vendors and models: a blank model is the cluster's
            cluster.model_of(model),
            {k: _json_value(v) for k, v in zip(keys, values, strict=True) if v is not None},
            from_epoch(updated) if updated is not None else None,
            from_epoch(probe) if probe is not None else None,
            source,
        )
        for hostname, index, model, updated, probe, source, *values in rows
    ]


def _json_value(value: object) -> Any:
    """A JSON value read as text (PostgreSQL's `->>`: `62`, `1834.2`, `true`, a string
    unquoted) or as itself (SQLite) → the value the document holds (a number: the intake
    keeps numbers only)."""
    if not isinstance(value, str):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return value  # a string


def non_finite(jobs: list[Job], since: dt.datetime) -> list[NonFinite]:
    """Job-wide samples with a non-finite loss or grad norm since `since`."""
    return [
        NonFinite(job_id, ts, step, what)
        for job_id, ts, step, what in JobMetric.objects.filter(job__in=jobs, ts__gte=since)
        .filter(~Q(nonfinite=""))
        .values_list("job_id", "ts", "step", "nonfinite")
    ]


def gpu_events(cluster: Cluster, since: dt.datetime) -> list[GpuEvent]:
    """XID/ECC/link events of nodes in service that arrived after `since` (server time)."""
    return [
        GpuEvent(hostname, gpu, at, kind, value, previous, pci_bus)
        for hostname, gpu, at, kind, value, previous, pci_bus in TelemetryEvent.objects.filter(
            node__cluster=cluster, node__state__in=IN_SERVICE, recorded_at__gt=since
        ).values_list("node__hostname", "gpu", "at", "kind", "value", "previous", "pci_bus")
    ]


def node_gpus(cluster: Cluster, fresh_after: dt.datetime) -> list[NodeGpus]:
    """Each node in service: its GPU count and how many of its GPUs reported since
    `fresh_after` (one grouped query)."""
    return [
        NodeGpus(hostname, gpu_count, reporting)
        for hostname, gpu_count, reporting in Node.objects.filter(
            cluster=cluster, state__in=IN_SERVICE
        )
        .annotate(reporting=Count("gpus", filter=Q(gpus__updated_at__gte=fresh_after)))
        .values_list("hostname", "gpu_count", "reporting")
    ]


def previous_run_start(cluster: Cluster, kind: str, now: dt.datetime) -> dt.datetime:
    """When the previous finished run of `kind` began (events after it are new), else a
    short window back."""
    last = (
        CheckRun.objects.filter(
            cluster=cluster, kind=kind, status=RunStatus.DONE, started_at__lt=now
        )
        .order_by("-started_at")
        .values_list("started_at", flat=True)
        .first()
    )
    return last or now - FIRST_WINDOW


def result_counts(cluster: Cluster, kind: str, key: str) -> dict[str, int]:
    """target → the positive count stored under `key` in the details of `kind`'s results."""
    rows = CheckResult.objects.filter(cluster=cluster, kind=kind).filter(
        **{f"details__{key}__gt": 0}
    )
    return {
        target: int(details[key])
        for target, details in rows.values_list("target", "details")
        if isinstance(details.get(key), int | float)
    }


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


def result_times(cluster: Cluster, kind: str, key: str) -> dict[str, list[dt.datetime]]:
    """target → the times stored as a list under `key` in the details of `kind`'s results
    that hold one (a port's warnings within the hour)."""
    rows = CheckResult.objects.filter(cluster=cluster, kind=kind, details__has_key=key)
    out: dict[str, list[dt.datetime]] = {}
    for target, details in rows.values_list("target", "details"):
        times = [dt.datetime.fromisoformat(t) for t in details.get(key) or () if isinstance(t, str)]
        if times:
            out[target] = times
    return out


def job_of_node(jobs: list[Job]) -> dict[str, int]:
    """hostname → the largest running job on it."""
    size = {job.pk: job.gpu_count for job in jobs}
    out: dict[str, int] = {}
    for job_id, hostname in Job.nodes.through.objects.filter(job__in=jobs).values_list(
        "job_id", "node__hostname"
    ):
        if hostname not in out or size[job_id] > size[out[hostname]]:
            out[hostname] = job_id
    return out
