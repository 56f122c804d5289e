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
from apps.jobs.hang import STALL_STEPS, judge, stall_window
from apps.jobs.hang_inputs import rank_states, rank_views_of, steps_of_jobs
from apps.jobs.models import Job

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


def job_progress(jobs: list[Job], times: dict[int, list[float]], window: int) -> list[JobProgress]:
    """Each running job's progress (kept on the job at intake) and the step times of its
    newest `window` samples (`times`: each job's newest ones, oldest first)."""
    return [
        JobProgress(
            job.pk,
            job.name,
            job.started_at,
            job.progress_at,
            job.progress_step,
            times.get(job.pk, [])[-window:],
        )
        for job in jobs
    ]


def run(ctx: Context) -> list[Finding]:
    """Each running job's newest progress and recent step times, judged; then, for a job
    whose ranks registered and that hangs or has a rank reporting a stall, what the ranks'
    stall reports say. A fixed number of queries over all the cluster's running jobs (the
    step times, the ranks in brief, the ranks of the jobs judged), plus the evidence
    against the nodes of a job that hangs with no minority of ranks to blame."""
    window = ctx.limits.hang_window
    times = steps_of_jobs(ctx.jobs, max(window, STALL_STEPS))
    findings = job_hang(job_progress(ctx.jobs, times, window), now=ctx.now, limits=ctx.limits)
    states = rank_states([j.pk for j in ctx.jobs])
    if not states:
        return findings
    # A job that passes and whose ranks report no stall keeps its finding as it is (the
    # verdict is not due): only the others' ranks are read.
    judged_jobs = {
        f.job for f in findings if f.job in states and (f.status != "pass" or states[f.job].stalled)
    }
    views = rank_views_of({pk: states[pk].attempt for pk in judged_jobs if pk is not None})
    jobs = {j.pk: j for j in ctx.jobs}
    out = []
    for f in findings:
        verdict = None
        if f.job in views:
            job = jobs[f.job]
            stall_s = stall_window(times.get(job.pk, [])[-STALL_STEPS:])
            verdict = judge(views[f.job], progress_at=job.progress_at, stall_s=stall_s, now=ctx.now)
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
