"""What an incident cost (docs/formulas.md, What an incident cost): downtime, rework, lost
GPU-hours. Pure.

An incident that is not yet recovered keeps costing (docs/incidents.md): its downtime runs to the
moment it is read. Rework is fixed at the failure (the work since the last finished checkpoint),
so a stored `rework_s` plus `cost_at(now)` gives the whole cost at any instant.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from apps.common.intervals import Interval, length, subtract
from apps.common.limits import DURATION_S


@dataclass(frozen=True)
class Impact:
    """Seconds of downtime and rework, and the GPU-hours they cost the job."""

    downtime_s: float
    rework_s: float
    lost_gpu_hours: float


def last_checkpoint_before(
    failed_at: dt.datetime, checkpoints: Iterable[tuple[dt.datetime, float]]
) -> dt.datetime | None:
    """`saved_at` of the newest checkpoint finished (saved_at + blocking_s) by `failed_at`."""
    done = [
        saved
        for saved, blocking in checkpoints
        # a blocking time past the bound on durations (stored before it) is unknown: no
        # pause, as apps.jobs.models.known_blocking reads it
        if saved + dt.timedelta(seconds=blocking if 0 <= blocking <= DURATION_S else 0.0)
        <= failed_at
    ]
    return max(done, default=None)


def impact(
    *,
    failed_at: dt.datetime,
    recovered_at: dt.datetime | None,
    now: dt.datetime,
    planned: bool,
    job_gpus: int | None,
    job_started_at: dt.datetime | None,
    job_ended_at: dt.datetime | None = None,
    checkpoints: Iterable[tuple[dt.datetime, float]] = (),
    earlier_downtimes: Iterable[Interval] = (),
) -> Impact:
    """Downtime runs from the failure to recovery (else the job's end, else now). An
    unexpected interruption also loses the work since the job's last finished checkpoint
    (else since it started), less any time the job was already down for an earlier
    interruption. Without a job there is downtime but no GPU-hours lost."""
    rework = 0.0
    if not planned and job_started_at is not None:
        since = max(
            last_checkpoint_before(failed_at, checkpoints) or job_started_at, job_started_at
        )
        lost_work = subtract([(since, failed_at)], earlier_downtimes)
        rework = length(lost_work)
    return cost_at(
        failed_at=failed_at,
        recovered_at=recovered_at,
        job_ended_at=job_ended_at,
        now=now,
        rework_s=rework,
        job_gpus=job_gpus,
    )


def cost_at(
    *,
    failed_at: dt.datetime,
    recovered_at: dt.datetime | None,
    job_ended_at: dt.datetime | None,
    now: dt.datetime,
    rework_s: float,
    job_gpus: int | None,
) -> Impact:
    """The cost at `now` of an incident whose rework is known: downtime from the failure to
    recovery, else the job's end, else `now` (an open incident keeps costing); every second
    of downtime and rework costs each of the interrupted job's GPUs."""
    until = recovered_at or job_ended_at or now
    downtime = max(0.0, (until - failed_at).total_seconds())
    return Impact(downtime, rework_s, (job_gpus or 0) * (downtime + rework_s) / 3600)
