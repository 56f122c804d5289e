"""Every scheduled check: its kind, the incident categories it opens, and how it runs —
load its inputs (`inputs`), call its pure detector (`detectors`). A new check is a detector
module and one entry here."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from apps.fleet.models import Cluster
from apps.health import detectors as d
from apps.health import inputs
from apps.health.choices import CheckKind
from apps.health.thresholds import Limits
from apps.incidents.choices import Category
from apps.jobs.models import Job
from apps.maintenance.selectors import nodes_in_maintenance


@dataclass
class Context:
    """One run of one check over one cluster."""

    kind: CheckKind
    cluster: Cluster
    now: dt.datetime
    limits: Limits

    @cached_property
    def jobs(self) -> list[Job]:
        """The cluster's running jobs, largest first."""
        return inputs.running_jobs(self.cluster)

    @cached_property
    def job_of_node(self) -> dict[str, int]:
        """hostname → the largest running job on it."""
        return inputs.job_of_node(self.jobs)

    @cached_property
    def in_maintenance(self) -> set[str]:
        """Hostnames of the cluster's nodes a maintenance window covers now: the checks skip
        them (docs/maintenance.md, What a window does)."""
        return nodes_in_maintenance(self.cluster.pk, self.now)

    @cached_property
    def jobs_in_maintenance(self) -> set[int]:
        """Running jobs with a node under maintenance: the window stopped them (a planned
        interruption), so what their progress says is no finding."""
        if not self.in_maintenance:
            return set()
        return set(
            Job.nodes.through.objects.filter(
                job_id__in=[j.pk for j in self.jobs], node__hostname__in=self.in_maintenance
            ).values_list("job_id", flat=True)
        )

    def streaks(self, key: str) -> dict[str, int]:
        """target → the count under `key` that the previous run stored in its result
        (how many runs in a row a condition has held)."""
        return inputs.result_counts(self.cluster, self.kind, key)


@dataclass(frozen=True)
class Check:
    """A scheduled check."""

    kind: CheckKind
    categories: tuple[Category, ...]
    run: Callable[[Context], list[d.Finding]]


def skip_maintenance(findings: list[d.Finding], ctx: Context) -> list[d.Finding]:
    """The findings without those on nodes under maintenance (a node's or one of its GPUs')
    and those on jobs a window stopped: no result, no incident, no state change for them."""
    quiet, stopped = ctx.in_maintenance, ctx.jobs_in_maintenance
    if not quiet:
        return findings
    return [
        f
        for f in findings
        if not (f.node in quiet or (f.node is None and f.job is not None and f.job in stopped))
    ]


def _heartbeat(ctx: Context) -> list[d.Finding]:
    # Nodes under maintenance are left out before detection: nor do they count towards the
    # share of silent nodes that means the monitoring path is down.
    quiet = ctx.in_maintenance
    nodes = [n for n in inputs.nodes_seen(ctx.cluster) if n.hostname not in quiet]
    return d.heartbeat(
        nodes,
        now=ctx.now,
        limits=ctx.limits,
        cluster=ctx.cluster.name,
        places=inputs.places(ctx.cluster),
    )


def _job_hang(ctx: Context) -> list[d.Finding]:
    progress = inputs.job_progress(ctx.jobs, ctx.limits.hang_window)
    return d.job_hang(progress, now=ctx.now, limits=ctx.limits)


def _slow_node(ctx: Context) -> list[d.Finding]:
    return d.slow_node(
        inputs.node_timings(ctx.jobs, ctx.now),
        inputs.gpus_latest(ctx.cluster, ("gemm_tflops",)),
        limits=ctx.limits,
        job_names={j.pk: j.name for j in ctx.jobs},
    )


def _sdc(ctx: Context) -> list[d.Finding]:
    since = ctx.now - dt.timedelta(seconds=ctx.limits.sdc_round_s)
    return d.sdc(
        inputs.non_finite(ctx.jobs, since),
        {j.pk: j.name for j in ctx.jobs},
        inputs.gpus_latest(ctx.cluster, ("gemm_checksum",)),
        limits=ctx.limits,
    )


def _gpu_errors(ctx: Context) -> list[d.Finding]:
    since = inputs.previous_run_start(ctx.cluster, ctx.kind, ctx.now)
    fresh_after = ctx.now - dt.timedelta(seconds=ctx.limits.heartbeat_s)
    return d.gpu_errors(
        inputs.gpu_events(ctx.cluster, since),
        inputs.gpus_latest(ctx.cluster, ("row_remap_failure",)),
        limits=ctx.limits,
        nodes=inputs.node_gpus(ctx.cluster, fresh_after),
        missing_runs=ctx.streaks("missing_runs"),
    )


def _thermal(ctx: Context) -> list[d.Finding]:
    gpus = inputs.gpus_latest(ctx.cluster, ("temp_c", "mem_temp_c"))
    return d.thermal(gpus, now=ctx.now, limits=ctx.limits, hot_runs=ctx.streaks("hot_runs"))


CHECKS: dict[CheckKind, Check] = {
    c.kind: c
    for c in (
        Check(CheckKind.HEARTBEAT, (Category.NODE_UNREACHABLE,), _heartbeat),
        Check(CheckKind.JOB_HANG, (Category.HANG,), _job_hang),
        Check(CheckKind.SLOW_NODE, (Category.SLOW_NODE,), _slow_node),
        Check(CheckKind.SDC, (Category.SILENT_DATA_CORRUPTION,), _sdc),
        Check(
            CheckKind.GPU_ERRORS,
            (Category.GPU_HBM, Category.GPU, Category.GPU_SYSTEM_PROCESSOR),
            _gpu_errors,
        ),
        Check(CheckKind.THERMAL, (Category.GPU_THERMAL,), _thermal),
    )
}


def check_for(kind: str) -> Check:
    """The scheduled check of `kind`; ValueError for one that does not run on a schedule."""
    try:
        return CHECKS[CheckKind(kind)]
    except (KeyError, ValueError):
        raise ValueError(f"{kind} does not run on a schedule") from None
