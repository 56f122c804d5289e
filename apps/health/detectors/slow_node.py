"""`slow_node`: a node that computes slower than its job's others, or a GPU whose GEMM probe
is slow for its model (docs/checks.md, `slow_node`)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from apps.fleet.choices import NodeState
from apps.fleet.gpu_models import canonical_model
from apps.health.detectors.findings import (
    Finding,
    Outcome,
    finite,
    gpu_target,
    node_target,
    number,
    passed,
    warned,
)
from apps.health.detectors.gpus import GpuLatest
from apps.incidents.choices import Category, Severity

if TYPE_CHECKING:  # the check's thresholds, declared by its plug-in
    from apps.health.checks.slow_node import SlowNodeLimits

KIND = "slow_node"
SLOW = Outcome(Category.SLOW_NODE, Severity.SEV3, node_state=NodeState.SUSPECT)
# A GPU whose GEMM probe is not slow: what the plug-in's candidates query takes as passing
# unchanged (checks/slow_node.py).
GEMM_WITHIN = "GEMM throughput within the limit"


def slow_node(
    job_nodes: Mapping[int, Mapping[str, Sequence[float]]],
    gpus: Sequence[GpuLatest],
    *,
    limits: SlowNodeLimits,
    job_names: Mapping[int, str] | None = None,
    medians: Mapping[str, float] | None = None,
) -> list[Finding]:
    """Per running job, a node whose median compute time (last 20 samples, ≥ 5 of them)
    exceeds 1.10 × the median over its nodes (≥ 4 nodes) is slow; so is a GPU whose latest
    GEMM TFLOP/s is under 0.90 × the median of its model in the cluster.

    With `medians` (each model's median over the whole cluster), `gpus` may be only some of
    the cluster's GPUs (docs/checks.md, Candidates): each is judged against its model's
    median as it would be among all of them."""
    names = job_names or {}
    out = [f for job, per_node in job_nodes.items() for f in _compute(job, per_node, limits, names)]
    out.extend(_gemm(gpus, limits, medians))
    return out


def _compute(
    job: int,
    per_node: Mapping[str, Sequence[float]],
    limits: SlowNodeLimits,
    names: Mapping[int, str],
) -> list[Finding]:
    medians = {}
    for host, values in per_node.items():
        recent = finite(values)[-limits.slow_samples :]
        if len(recent) >= limits.slow_min_samples:
            medians[host] = statistics.median(recent)
    if len(medians) < limits.slow_min_nodes:
        return []
    overall = statistics.median(medians.values())
    out = []
    for host, m in sorted(medians.items()):
        ratio = m / overall if overall > 0 else 1.0
        details = {
            "job": job,
            "node_median_compute_s": round(m, 4),
            "job_median_compute_s": round(overall, 4),
            "ratio": round(ratio, 4),
        }
        target = node_target(host)
        if ratio > limits.slow_factor:
            message = (
                f"computes {ratio:.2f}× the median of job {names.get(job, job)} "
                f"({m:.3f} s vs {overall:.3f} s)"
            )
            out.append(warned(KIND, target, message, details, outcome=SLOW, node=host, job=job))
        else:
            out.append(
                passed(KIND, target, "compute time within the limit", details, node=host, job=job)
            )
    return out


def _gemm(
    gpus: Sequence[GpuLatest], limits: SlowNodeLimits, medians: Mapping[str, float] | None
) -> list[Finding]:
    by_model: dict[str, list[tuple[GpuLatest, float]]] = defaultdict(list)
    for gpu in gpus:
        value = number(gpu.metrics.get("gemm_tflops"))
        if value is not None:
            # one model under any of its names (docs/pages.md, One name per model)
            by_model[canonical_model(gpu.model)].append((gpu, value))
    out = []
    for model, members in by_model.items():
        if medians is None:
            median = statistics.median(v for _, v in members)
        elif model in medians:  # the cluster's, figured in SQL
            median = medians[model]
        else:
            continue  # a model first reported since: judged on the next run
        for gpu, value in members:
            target = gpu_target(gpu.node, gpu.index)
            details = {"gemm_tflops": value, "model_median": median, "model": model}
            if median > 0 and value < limits.gemm_factor * median:
                message = (
                    f"GEMM {value:.1f} TFLOP/s is {value / median:.0%} of the {model} median "
                    f"({median:.1f})"
                )
                out.append(warned(KIND, target, message, details, outcome=SLOW, node=gpu.node))
            else:
                out.append(passed(KIND, target, GEMM_WITHIN, details, node=gpu.node))
    return out
