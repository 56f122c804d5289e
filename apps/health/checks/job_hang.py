"""`job_hang`: a running job whose progress stopped — a hang that reports no error
(docs/checks.md, `job_hang`)."""

from __future__ import annotations

from apps.health import inputs
from apps.health.checks.base import CheckSpec, Context, Target
from apps.health.detectors import Finding, job_hang
from apps.incidents.choices import Category


def run(ctx: Context) -> list[Finding]:
    """Each running job's newest progress and recent step times, judged."""
    progress = inputs.job_progress(ctx.jobs, ctx.limits.hang_window)
    return job_hang(progress, now=ctx.now, limits=ctx.limits)


SPEC = CheckSpec(
    kind="job_hang", label="Job hang", target=Target.JOB, categories=(Category.HANG,), run=run
)
