"""`job_hang`: a running job that stopped making progress (docs/checks.md, `job_hang`).

Progress is the newest sample, job-wide or per node, whose step is higher than every step
the job reported before it: a job whose ranks report only per-node samples progresses, one
that keeps re-reporting the same step does not.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from apps.health.detectors.findings import Finding, Outcome, failed, finite, job_target, passed
from apps.health.thresholds import Limits
from apps.incidents.choices import Category, Severity

KIND = "job_hang"
HUNG = Outcome(Category.HANG, Severity.SEV1, interrupts_job=True)


@dataclass(frozen=True)
class JobProgress:
    """A running job: when it started, its highest step and when that step was first
    reached (None: no sample since it started), and its recent step times, oldest first."""

    job: int
    name: str
    started_at: dt.datetime | None
    progress_at: dt.datetime | None
    step: int | None = None
    step_times: Sequence[float] = ()


def job_hang(jobs: Sequence[JobProgress], *, now: dt.datetime, limits: Limits) -> list[Finding]:
    """A running job whose newest progress is older than max(600 s, 10 × the median step
    time of its last 50 samples) hangs; one with no progress since it started hangs
    1,800 s after it started."""
    out = []
    for j in jobs:
        target = job_target(j.job)
        progress = j.progress_at
        if progress is not None and j.started_at is not None and progress < j.started_at:
            progress = None  # progress of an earlier attempt: this one has shown none yet
        if progress is None:
            if j.started_at is None:
                continue
            waited = (now - j.started_at).total_seconds()
            details: dict[str, object] = {
                "waited_s": round(waited, 1),
                "limit_s": limits.hang_no_metrics_s,
            }
            if waited > limits.hang_no_metrics_s:
                message = f"{j.name}: no step reported in {waited:.0f} s since it started"
                out.append(
                    failed(
                        KIND,
                        target,
                        message,
                        details,
                        outcome=HUNG,
                        job=j.job,
                        occurred_at=j.started_at,
                    )
                )
            else:
                out.append(passed(KIND, target, f"{j.name}: started recently", details, job=j.job))
            continue
        steps = finite(j.step_times)[-limits.hang_window :]
        median = statistics.median(steps) if steps else 0.0
        limit = max(limits.hang_min_s, limits.hang_step_factor * median)
        age = (now - progress).total_seconds()
        details = {
            "step": j.step,
            "since_progress_s": round(age, 1),
            "limit_s": round(limit, 1),
            "median_step_s": round(median, 3),
        }
        if age > limit:
            message = f"{j.name}: stuck at step {j.step} for {age:.0f} s (limit {limit:.0f} s)"
            out.append(
                failed(
                    KIND, target, message, details, outcome=HUNG, job=j.job, occurred_at=progress
                )
            )
        else:
            out.append(passed(KIND, target, f"{j.name}: progressing", details, job=j.job))
    return out
