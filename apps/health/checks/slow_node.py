"""`slow_node`: a node slower than its job's others, or a GPU slower than its model's
(docs/checks.md, `slow_node`)."""

from __future__ import annotations

import datetime as dt
import statistics
from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, Q
from django.utils.translation import gettext_lazy as _

from apps.common.dbfuncs import JsonNumber
from apps.fleet.gpu_models import canonical_model
from apps.fleet.models import GPU, Cluster
from apps.health import inputs
from apps.health.checks.base import CheckSpec, Context
from apps.health.detectors import Finding, slow_node
from apps.health.detectors.findings import NODE
from apps.health.detectors.slow_node import GEMM_WITHIN
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


def gemm_medians(cluster: Cluster) -> dict[str, tuple[float, list[str]]]:
    """model → the median of its GPUs' latest GEMM TFLOP/s in the cluster, and the names
    its GPUs are stored under; in SQL: how many GPUs of each name report a number, then each
    model's middle one or two values (`statistics.median` of those: the median of all).
    One statement, and one per model, whatever the number of GPUs; the same numbers as the
    detector reads (a JSON number, as a float)."""
    reporting = (
        GPU.objects.filter(node__cluster=cluster)
        .annotate(v=JsonNumber("metrics", "gemm_tflops"))
        .filter(v__isnull=False)
        .order_by()
    )
    sizes: dict[str, int] = defaultdict(int)
    names: dict[str, list[str]] = defaultdict(list)
    for name, n in reporting.values_list("model").annotate(n=Count("pk")):
        model = canonical_model(cluster.model_of(name))
        sizes[model] += n
        names[model].append(name)
    out = {}
    for model, n in sizes.items():
        middle = (
            reporting.filter(model__in=names[model])
            .order_by("v")
            .values_list("v", flat=True)[(n - 1) // 2 : n // 2 + 1]
        )
        values = [float(v) for v in middle]
        if values:  # else its GPUs stopped reporting meanwhile
            out[model] = (statistics.median(values), sorted(names[model]))
    return out


def run(ctx: Context) -> list[Finding]:
    """Per-node compute times of the running jobs, and the GEMM probes of the GPUs to
    judge against their model's median. A GPU at or above `gemm_factor` × that median whose
    stored result is the pass "GEMM throughput within the limit" would pass again
    unchanged: it is counted, not loaded (docs/checks.md, Candidates)."""
    medians = gemm_medians(ctx.cluster)
    fast = Q(pk__in=[])  # no model: nothing passes unloaded
    for median, names in medians.values():
        bar = Q(v_gemm_tflops__gte=ctx.limits.gemm_factor * median) if median > 0 else Q()
        fast |= Q(model__in=names) & bar
    picked = inputs.gpus_candidates(
        ctx.cluster,
        ctx.kind,
        ("gemm_tflops",),
        passing=fast,
        message=GEMM_WITHIN,
        skip_hosts=ctx.in_maintenance,
        among=Q(v_gemm_tflops__isnull=False),
    )
    ctx.unchanged += picked.unchanged
    return slow_node(
        node_timings(ctx.jobs, ctx.now),
        picked.gpus,
        limits=ctx.limits,
        job_names={j.pk: j.name for j in ctx.jobs},
        medians={model: median for model, (median, _) in medians.items()},
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
