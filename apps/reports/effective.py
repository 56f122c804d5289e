"""Weekly effective training rate (docs/formulas.md) — pure functions over plain intervals.

For each job the lost intervals (downtime, planned downtime, rework since the last usable
checkpoint, checkpoint blocking time) are clipped to the job's run within the window and
counted once however they overlap; an instant covered by several goes to the first cause of
`CAUSES`. Every figure is weighted by the job's GPU count. The downtime of failures is then
cut at each one's detection, localisation and mitigation (`DOWNTIME_PARTS`):
docs/formulas.md, Where the downtime went.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from apps.common.intervals import Interval, clip, length, subtract, union
from apps.jobs.mfu import finite

HOUR = 3600.0
# Where intervals overlap, the instant goes to the first of these.
CAUSES = ("downtime", "planned", "rework", "checkpoint")
# The causes an interruption brings (checkpoint time is counted apart: JobRun.blocked_seconds).
INCIDENT_CAUSES = CAUSES[:3]
# The parts of a failure's downtime, cut at detected_at, localized_at and mitigated_at.
DOWNTIME_PARTS = ("detect", "localise", "mitigate", "restart")


@dataclass(frozen=True)
class Interruption:
    """An incident that interrupts the job: f(i), recovery, planned or not."""

    incident_id: int
    failed_at: dt.datetime
    recovered_at: dt.datetime | None
    planned: bool
    category: str = "other"
    detected_at: dt.datetime | None = None
    localized_at: dt.datetime | None = None
    mitigated_at: dt.datetime | None = None

    def cuts(self, end: dt.datetime) -> list[Interval]:
        """The downtime [f(i), end) as its `DOWNTIME_PARTS` in order: cut at detected_at,
        localized_at and mitigated_at, each held inside [f(i), end) and not before the cut
        ahead of it; a missing time leaves its share to the next part."""
        end = max(end, self.failed_at)
        at = [self.failed_at]
        for t in (self.detected_at, self.localized_at, self.mitigated_at):
            at.append(at[-1] if t is None else min(max(t, at[-1]), end))
        at.append(end)
        return list(zip(at, at[1:], strict=False))


@dataclass(frozen=True)
class JobRun:
    """What the weekly rate needs of one job. `checkpoints` are (saved_at, blocking_s), any
    order."""

    id: int
    name: str
    gpu_count: int
    started_at: dt.datetime
    ended_at: dt.datetime | None
    interruptions: Sequence[Interruption] = ()
    checkpoints: Sequence[tuple[dt.datetime, float]] = ()
    mean_mfu: float | None = None

    @cached_property
    def saves(self) -> list[tuple[dt.datetime, float]]:
        """The checkpoints in time order (computed once, reused week after week)."""
        return sorted(self.checkpoints)

    @cached_property
    def _blocked(self) -> tuple[list[Interval], list[dt.datetime], list[float]]:
        """The union of all checkpoint blocking intervals, their starts, and prefix sums of
        their lengths: any window's checkpoint time is then two bisections away."""
        blocked = union((t, t + dt.timedelta(seconds=b)) for t, b in self.saves)
        prefix = [0.0]
        for s, e in blocked:
            prefix.append(prefix[-1] + (e - s).total_seconds())
        return blocked, [s for s, _ in blocked], prefix

    def blocked_seconds(self, lo: dt.datetime, hi: dt.datetime) -> float:
        """Seconds within [lo, hi) during which a checkpoint was blocking training."""
        blocked, starts, prefix = self._blocked
        i = max(bisect.bisect_right(starts, lo) - 1, 0)
        j = bisect.bisect_left(starts, hi)
        if hi <= lo or i >= j:
            return 0.0
        total = prefix[j] - prefix[i]
        s, e = blocked[i]
        if lo > s:
            total -= (min(e, lo) - s).total_seconds()
        s, e = blocked[j - 1]
        if e > hi:
            total -= (e - max(s, hi)).total_seconds()
        return total


@dataclass
class JobWeek:
    """One job's wall time and lost time in the window, in seconds."""

    job: JobRun
    wall_s: float = 0.0
    lost_s: float = 0.0
    by_cause: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0.0))
    by_incident: dict[int, float] = field(default_factory=dict)
    # The `downtime` cause split into DOWNTIME_PARTS: the same instants, so they sum to it.
    downtime_parts: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(DOWNTIME_PARTS, 0.0)
    )

    @property
    def effective_rate(self) -> float | None:
        """(T − L) / T, or None when the job did not run in the window."""
        return (self.wall_s - self.lost_s) / self.wall_s if self.wall_s else None


def restart_point(
    checkpoints: Sequence[tuple[dt.datetime, float]], failed_at: dt.datetime
) -> dt.datetime | None:
    """`saved_at` of the latest checkpoint whose save finished by the failure
    (`saved_at + blocking_s ≤ f(i)`); None when there is none. `checkpoints` sorted."""
    i = bisect.bisect_right(checkpoints, (failed_at, float("inf")))
    for saved_at, blocking_s in reversed(checkpoints[:i]):
        if saved_at + dt.timedelta(seconds=blocking_s) <= failed_at:
            return saved_at
    return None


Lost = tuple[Interval, Interruption]


def _lost_intervals(job: JobRun, end: dt.datetime) -> dict[str, list[Lost]]:
    """Downtime, planned downtime and rework intervals before clipping, with the incident
    behind each (checkpoint time is counted from `JobRun.blocked_seconds`)."""
    checkpoints = job.saves
    out: dict[str, list[Lost]] = {c: [] for c in INCIDENT_CAUSES}
    for i in job.interruptions:
        down_end = i.recovered_at or job.ended_at or end
        out["planned" if i.planned else "downtime"].append(((i.failed_at, down_end), i))
        if not i.planned:
            since = restart_point(checkpoints, i.failed_at) or job.started_at
            out["rework"].append(((since, i.failed_at), i))
    return out


def job_week(job: JobRun, *, start: dt.datetime, end: dt.datetime, now: dt.datetime) -> JobWeek:
    """The job's wall time T_j and lost time L_j in [start, end) (end clipped to now), lost
    time split by cause (first cause wins an overlap) and by incident."""
    end = min(end, now)
    result = JobWeek(job=job)
    run = clip([(job.started_at, job.ended_at or now)], (start, end))
    if not run:
        return result
    window = run[0]
    result.wall_s = length(run)
    taken: list[Interval] = []  # always disjoint and sorted (a union)
    for cause, intervals in _lost_intervals(job, end).items():
        # Of two intervals of one cause that overlap, the one that starts first takes the
        # instant; on a tie, the lower incident number (the downtime parts follow the same).
        for interval, i in sorted(intervals, key=lambda x: (x[0][0], x[1].incident_id)):
            part = subtract(clip([interval], window), taken)
            if not part:
                continue
            seconds = _span(part)
            result.by_cause[cause] += seconds
            result.by_incident[i.incident_id] = result.by_incident.get(i.incident_id, 0) + seconds
            if cause == "downtime":
                for name, cut in zip(DOWNTIME_PARTS, i.cuts(interval[1]), strict=True):
                    result.downtime_parts[name] += _span(clip(part, cut))
            taken = union([*taken, *part])
    # Checkpoints come last: their blocking time in the window, less what is already taken.
    blocked = job.blocked_seconds(*window) - sum(job.blocked_seconds(s, e) for s, e in taken)
    result.by_cause["checkpoint"] = blocked
    result.lost_s = _span(taken) + blocked
    return result


def _span(disjoint: list[Interval]) -> float:
    """Seconds covered by intervals already disjoint (what subtract and union return)."""
    return sum((e - s).total_seconds() for s, e in disjoint)


def weekly(
    jobs: Sequence[JobRun], *, start: dt.datetime, end: dt.datetime, now: dt.datetime
) -> dict[str, Any]:
    """The weekly rate over the jobs: effective rate, scheduled/productive/lost GPU-hours,
    GPU-weighted mean MFU, the per-job rows, lost GPU-hours per incident (for the links), and
    the failures' downtime split into detect, localise, mitigate and restart."""
    weeks = [w for j in jobs if (w := job_week(j, start=start, end=end, now=now)).wall_s > 0]
    scheduled = sum(w.job.gpu_count * w.wall_s for w in weeks) / HOUR
    lost = sum(w.job.gpu_count * w.lost_s for w in weeks) / HOUR
    by_cause = {c: sum(w.job.gpu_count * w.by_cause[c] for w in weeks) / HOUR for c in CAUSES}
    parts = {
        p: sum(w.job.gpu_count * w.downtime_parts[p] for w in weeks) / HOUR for p in DOWNTIME_PARTS
    }
    by_incident: dict[int, float] = defaultdict(float)
    for w in weeks:
        for incident_id, seconds in w.by_incident.items():
            by_incident[incident_id] += w.job.gpu_count * seconds / HOUR
    with_mfu = [(w.job.gpu_count, w.job.mean_mfu) for w in weeks if w.job.mean_mfu is not None]
    gpus = sum(g for g, _ in with_mfu)
    return {
        "effective_rate": (scheduled - lost) / scheduled if scheduled else None,
        "scheduled_gpu_hours": scheduled,
        "productive_gpu_hours": scheduled - lost,
        "lost_gpu_hours": by_cause,
        "downtime_breakdown_gpu_hours": parts,
        "mean_mfu": finite(sum(g * mfu for g, mfu in with_mfu) / gpus) if gpus else None,
        "jobs": [
            {
                "id": w.job.id,
                "name": w.job.name,
                "gpu_count": w.job.gpu_count,
                "wall_hours": w.wall_s / HOUR,
                "lost_hours": w.lost_s / HOUR,
                # What the jobs are ranked by: their hours weighted by their GPUs.
                "scheduled_gpu_hours": w.job.gpu_count * w.wall_s / HOUR,
                "lost_gpu_hours_total": w.job.gpu_count * w.lost_s / HOUR,
                "effective_rate": w.effective_rate,
                "mean_mfu": w.job.mean_mfu,
                "lost_gpu_hours": {c: w.job.gpu_count * w.by_cause[c] / HOUR for c in CAUSES},
            }
            for w in sorted(weeks, key=lambda w: -w.job.gpu_count * w.lost_s)
        ],
        "by_incident": dict(by_incident),
    }
