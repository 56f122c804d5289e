"""`job_hang`: a running job that stopped making progress (docs/checks.md, `job_hang`).

Progress is the newest sample, job-wide or per node, whose step is higher than every step
the job reported before it: a job whose ranks report only per-node samples progresses, one
that keeps re-reporting the same step does not.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from apps.health.choices import ResultStatus
from apps.health.detectors.findings import (
    Finding,
    Outcome,
    failed,
    finite,
    job_target,
    passed,
    warned,
)
from apps.incidents.choices import Category, Severity
from apps.jobs.hang import Verdict, number

if TYPE_CHECKING:  # the check's thresholds, declared by its plug-in
    from apps.health.checks.job_hang import JobHangLimits

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


def job_hang(
    jobs: Sequence[JobProgress], *, now: dt.datetime, limits: JobHangLimits
) -> list[Finding]:
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
                quiet = number(round(waited))
                message = f"{j.name}: no step reported in {quiet} s since it started"
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
            message = (
                f"{j.name}: stuck at "
                f"{f'step {number(j.step)}' if j.step is not None else 'its last step'} "
                f"for {number(round(age))} s "
                f"(limit {number(round(limit))} s)"
            )
            out.append(
                failed(
                    KIND, target, message, details, outcome=HUNG, job=j.job, occurred_at=progress
                )
            )
        else:
            out.append(passed(KIND, target, f"{j.name}: progressing", details, job=j.job))
    return out


def judged(
    finding: Finding,
    verdict: Verdict | None,
    *,
    now: dt.datetime,
    evidence: Sequence[str] = (),
) -> Finding:
    """`finding` (a job's `job_hang` result) with what its ranks say (docs/checks.md, Ranks).

    - The hang fired, or half the ranks have reported a stall for `stall_s` since the first
      report: a failure (a hang), naming the culprits' nodes when they are a minority (and
      marking them as the nodes to make `suspect`), else
      saying no minority stands out and naming only `evidence` (nodes the other checks hold
      something against, best first).
    - Half the ranks report a stall, for less than `stall_s` yet: a warning that opens
      nothing (a stall that resumes by itself is no incident), with the verdict in words.
    - Otherwise the finding as it was.
    """
    if verdict is None or not verdict.registered:
        return finding
    hung = finding.status == ResultStatus.FAIL
    stalled_for = (
        (now - verdict.first_report_at).total_seconds() if verdict.first_report_at else 0.0
    )
    if not hung and not verdict.due:
        return finding
    details = {
        **finding.details,
        "ranks": {
            "registered": verdict.registered,
            "stalled": verdict.stalled,
            "stall_s": round(verdict.stall_s, 1),
            "counts": dict(verdict.counts),
            "culprits": list(verdict.culprits)[:50],
            "minority": verdict.minority,
        },
    }
    if verdict.minority:
        culprits, sentence = tuple(verdict.culprit_nodes), verdict.sentence
    else:
        culprits = tuple(evidence[:3])
        sentence = verdict.sentence + (
            f"; the other evidence points first at {', '.join(culprits)}"
            if culprits
            else "; no node has other evidence against it, so none is named"
        )
    if not hung and stalled_for < verdict.stall_s:
        message = (
            f"{number(verdict.stalled)} of {number(verdict.registered)} ranks stalled "
            f"({number(round(stalled_for))} s since the first report; a hang after "
            f"{number(round(verdict.stall_s))} s): "
            f"{sentence}"
        )
        return warned(KIND, finding.target, message, details, job=finding.job)
    message = (
        finding.message
        if hung
        else f"{number(verdict.stalled)} of {number(verdict.registered)} ranks stalled for "
        f"{number(round(stalled_for))} s"
    ) + f" — {sentence}"
    occurred = finding.occurred_at if hung else (verdict.stalled_since or now)
    return dataclasses.replace(
        failed(
            KIND,
            finding.target,
            message,
            details,
            outcome=HUNG,
            job=finding.job,
            occurred_at=occurred,
        ),
        culprits=culprits,
        localized=sentence,
        suspects=culprits if verdict.minority else (),
    )
