"""`slow_node`: a node slower than its job's others, or a GPU slower than its model's
(docs/checks.md, `slow_node`)."""

from __future__ import annotations

from apps.health import inputs
from apps.health.checks.base import CheckSpec, Context, Target
from apps.health.detectors import Finding, slow_node
from apps.incidents.choices import Category


def run(ctx: Context) -> list[Finding]:
    """Per-node compute times of the running jobs and every GPU's GEMM probe, judged."""
    return slow_node(
        inputs.node_timings(ctx.jobs, ctx.now),
        inputs.gpus_latest(ctx.cluster, ("gemm_tflops",)),
        limits=ctx.limits,
        job_names={j.pk: j.name for j in ctx.jobs},
    )


SPEC = CheckSpec(
    kind="slow_node",
    label="Slow node",
    target=Target.NODE,
    categories=(Category.SLOW_NODE,),
    run=run,
)
