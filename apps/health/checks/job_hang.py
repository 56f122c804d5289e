"""`job_hang`: a running job whose progress stopped — a hang that reports no error — and,
where its ranks register and report stalls, which rank and node it waits on
(docs/checks.md, Ranks)."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from apps.health.checks.base import CheckSpec, Context
from apps.health.detectors import Finding, JobProgress, job_hang
from apps.health.detectors.findings import JOB
from apps.health.detectors.job_hang import judged
from apps.health.suspects import job_suspects
from apps.health.thresholds import Shared, threshold
from apps.incidents.choices import Category
from apps.jobs.hang import Verdict
from apps.jobs.models import Job, Rank
from apps.jobs.selectors import job_step_times, job_verdict

KIND = "job_hang"


@dataclass(frozen=True)
class JobHangLimits(Shared):
    """The job-hang check's thresholds (docs/checks.md, Thresholds), besides those every check
    shares."""

    hang_min_s: int = threshold(
        600, _("Hang: no progress for at least"), "s", check=KIND, lo=1, hi=86_400
    )
    hang_step_factor: float = threshold(
        10.0, _("Hang: or more than this many step times"), "×", check=KIND, lo=1, hi=1_000
    )
    hang_window: int = threshold(
        50, _("Hang: step times in the median"), _("samples"), check=KIND, lo=1, hi=10_000
    )
    hang_no_metrics_s: int = threshold(
        1800, _("Hang: a job with no sample after it started"), "s", check=KIND, lo=1, hi=604_800
    )


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


def run(ctx: Context) -> list[Finding]:
    """Each running job's newest progress and recent step times, judged; then, for a job
    whose ranks registered, what the ranks' stall reports say."""
    progress = job_progress(ctx.jobs, ctx.limits.hang_window)
    findings = job_hang(progress, now=ctx.now, limits=ctx.limits)
    with_ranks = set(
        Rank.objects.filter(job__in=[j.pk for j in ctx.jobs]).values_list("job_id", flat=True)
    )
    if not with_ranks:
        return findings
    jobs = {j.pk: j for j in ctx.jobs if j.pk in with_ranks}
    verdicts: dict[int, Verdict] = {pk: job_verdict(job, ctx.now) for pk, job in jobs.items()}
    out = []
    for f in findings:
        verdict = verdicts.get(f.job) if f.job is not None else None
        evidence: list[str] = []
        hung = verdict is not None and (verdict.due or f.status != "pass")
        if f.job is not None and verdict is not None and hung and not verdict.minority:
            evidence = [s.hostname for s in job_suspects(job=jobs[f.job], now=ctx.now)]
        out.append(judged(f, verdict, now=ctx.now, evidence=evidence))
    return out


SPEC = CheckSpec(
    kind=KIND,
    limits=JobHangLimits,
    label=_("Job hang"),
    order=20,
    target=JOB,
    categories=(Category.HANG,),
    run=run,
)
