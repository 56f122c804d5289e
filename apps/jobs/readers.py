"""What a job's open incidents say of it (CONTRACT §6), read through the incidents app.

Jobs import no incident (DESIGN: dependencies point one way); the incidents app lends its
reader here from its `AppConfig.ready()`. Every surface that shows a job's condition or its
MFU now — the job API, the job list and page, the overview — reads it through
`job_incidents`, a fixed number of queries for any number of jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

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


OK = JobIncidents()
Reader = Callable[[Sequence[int]], dict[int, JobIncidents]]
_lent: dict[str, Reader] = {"job_incidents": lambda job_ids: {}}


def lend(*, job_incidents: Reader) -> None:
    """Register the reader of jobs' open incidents (the incidents app does, at start-up)."""
    _lent["job_incidents"] = job_incidents


def job_incidents(job_ids: Sequence[int]) -> dict[int, JobIncidents]:
    """job id → its condition and open incidents; a job without any is `OK`."""
    found = _lent["job_incidents"](list(job_ids))
    return {pk: found.get(pk, OK) for pk in job_ids}
