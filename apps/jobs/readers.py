"""Reads a job's answers need from the apps above it: what its open incidents say of it
(docs/incidents.md, A job's condition) and when it was interrupted (the incidents app), its
cluster's MFU target (the reports app).

Jobs import no incident and no report (docs/architecture.md, Readers lent downwards); those apps
lend their readers here from their `AppConfig.ready()`. Every surface that shows a job's
condition or its MFU now — the job API, the job list and page, the overview — reads it
through `job_incidents`, a fixed number of queries for any number of jobs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from apps.common.lending import Registry
from apps.fleet.models import Cluster
from apps.fleet.readers import IncidentRef
from apps.jobs.choices import STOPPED_CONDITIONS, JobCondition


@dataclass(frozen=True)
class JobIncidents:
    """A job's condition, its open incidents (most severe first), and the incident that
    stopped it when it is hung or interrupted."""

    condition: str = JobCondition.OK
    open_incidents: tuple[IncidentRef, ...] = ()
    cause: IncidentRef | None = None

    @property
    def stopped(self) -> bool:
        """Hung or interrupted: the job does no work, its MFU now is 0."""
        return self.condition in STOPPED_CONDITIONS

    @property
    def condition_choice(self) -> JobCondition:
        """The condition as its choice member (label and colour)."""
        return JobCondition(self.condition)


@dataclass(frozen=True)
class Line:
    """A level drawn across a chart: a target (a floor) or a reference, with its label."""

    value: float
    label: str


@dataclass(frozen=True)
class MfuLines:
    """The MFU levels a job's chart draws: its cluster's target and the public reference."""

    target: Line | None = None
    reference: Line | None = None


OK = JobIncidents()
Reader = Callable[[Sequence[int]], dict[int, JobIncidents]]
# (start of the interruption, its recovery or None), newest first, at most `limit`.
Interruptions = Callable[[int, int], list[tuple[dt.datetime, dt.datetime | None]]]
MfuLinesReader = Callable[[Cluster], MfuLines]
# Told a job's progress was recorded: recovers the interruptions the job outlived
# (docs/incidents.md, A job's condition); returns how many.
Progressed = Callable[[int], int]
# Told these jobs' Slurm attempts changed: reads the road back of their interruptions
# (docs/incidents.md, The road back) in a number of queries that does not grow with the jobs
# when none has an interruption to follow; returns how many incidents changed.
Restarted = Callable[[Sequence[int]], int]

_lent = Registry(
    "apps.jobs.readers",
    lenders={
        "job_incidents": "the incidents app",
        "interruptions": "the incidents app",
        "mfu_lines": "the reports app",
        "progressed": "the incidents app",
        "restarted": "the incidents app",
    },
)


def lend(
    *,
    job_incidents: Reader | None = None,
    interruptions: Interruptions | None = None,
    mfu_lines: MfuLinesReader | None = None,
    progressed: Progressed | None = None,
    restarted: Restarted | None = None,
) -> None:
    """Register the reader of jobs' open incidents or of a job's interruptions and the
    follower of a job's progress (the incidents app does, at start-up), or of a cluster's
    MFU levels (the reports app)."""
    for name, reader in (
        ("job_incidents", job_incidents),
        ("interruptions", interruptions),
        ("mfu_lines", mfu_lines),
        ("progressed", progressed),
        ("restarted", restarted),
    ):
        if reader is not None:
            _lent[name] = reader


def job_incidents(job_ids: Sequence[int]) -> dict[int, JobIncidents]:
    """job id → its condition and open incidents; a job without any is `OK`."""
    found: dict[int, JobIncidents] = _lent["job_incidents"](list(job_ids))
    return {pk: found.get(pk, OK) for pk in job_ids}


def job_interruptions(job_id: int, *, limit: int) -> list[tuple[dt.datetime, dt.datetime | None]]:
    """The job's interruptions as (start, recovery or None), newest first, at most `limit`."""
    spans: list[tuple[dt.datetime, dt.datetime | None]] = _lent["interruptions"](job_id, limit)
    return spans


def job_progressed(job_id: int) -> int:
    """The job's progress was recorded: its interruptions it outlived recover (a job that
    keeps making progress is not interrupted); returns how many."""
    done: int = _lent["progressed"](job_id)
    return done


def jobs_restarted(job_ids: Sequence[int]) -> int:
    """These jobs' Slurm attempts changed: the road back of their interruptions is read
    again; returns how many incidents changed."""
    done: int = _lent["restarted"](list(job_ids))
    return done


def mfu_lines(cluster: Cluster) -> MfuLines:
    """The cluster's MFU target and the public reference, as a job's chart draws them."""
    lines: MfuLines = _lent["mfu_lines"](cluster)
    return lines
