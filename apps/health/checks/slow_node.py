"""`slow_node`: a node slower than its job's others, or a GPU slower than its model's
(docs/checks.md, `slow_node`)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from apps.health import inputs
from apps.health.checks.base import CheckSpec, Context
from apps.health.detectors import Finding, slow_node
from apps.health.detectors.findings import NODE
from apps.health.thresholds import Shared, threshold
from apps.incidents.choices import Category
from apps.jobs.models import Job, NodeStepMetric

KIND = "slow_node"


@dataclass(frozen=True)
class SlowNodeLimits(Shared):
    """The slow-node check's thresholds (docs/checks.md, Thresholds), besides those every check
    shares."""

    slow_factor: float = threshold(
        1.10,
        _("Slow node: compute time over the job's median"),
        "×",
        check=KIND,
        lo=1,
        hi=100,
        above_lo=True,
    )
    slow_samples: int = threshold(
        20, _("Slow node: newest samples per node"), _("samples"), check=KIND, lo=1, hi=10_000
    )
    slow_min_samples: int = threshold(
        5, _("Slow node: samples a node needs"), _("samples"), check=KIND, lo=1, hi=10_000
    )
    slow_min_nodes: int = threshold(
        4, _("Slow node: nodes a job needs"), _("nodes"), check=KIND, lo=2, hi=100_000
    )
    gemm_factor: float = threshold(
        0.90,
        _("Slow GPU: GEMM throughput under its model's median"),
        "×",
        check=KIND,
        hi=1,
        above_lo=True,
    )


# Per-node timings older than this are not "recent" for the slow-node check.
TIMING_WINDOW = dt.timedelta(minutes=30)


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


def run(ctx: Context) -> list[Finding]:
    """Per-node compute times of the running jobs and every GPU's GEMM probe, judged."""
    return slow_node(
        node_timings(ctx.jobs, ctx.now),
        inputs.gpus_latest(ctx.cluster, ("gemm_tflops",)),
        limits=ctx.limits,
        job_names={j.pk: j.name for j in ctx.jobs},
    )


SPEC = CheckSpec(
    kind=KIND,
    limits=SlowNodeLimits,
    label=_("Slow node"),
    order=30,
    target=NODE,
    categories=(Category.SLOW_NODE,),
    run=run,
)
