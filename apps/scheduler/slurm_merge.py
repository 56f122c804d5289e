"""Which job a Slurm record belongs to, and what the job becomes
(docs/integrations.md, 4. Slurm). Pure.

A job is (cluster, Slurm job id, submit time). Slurm gives every attempt of a requeued job
a submit time of its own — the moment of the requeue, which is also when the attempt
before it ended — so a record joins a known job with the same id when:

1. it is an attempt the job already has (same key: the attempt's submit time), or its
   submit time is the job's;
2. it was submitted when one of the job's attempts ended (a later attempt), or it ended
   when the job's first known attempt was submitted (an earlier one);
3. it says it was requeued (`restart_cnt` > 0) and the job has not ended;
4. the job has no submit time (registered by a launcher, `POST jobs/`, or stored before
   submit times were kept) and was registered after this record was submitted;
5. the record has no submit time: the newest job with that id.

Anything else with a known id is a reused id (a controller restarted with fresh state, or
ids wrapped at MaxJobId): a new job. The job's times come from its attempts: it started
when its first attempt started, its status and end are those of its newest attempt, and an
attempt that never started (cancelled while pending) leaves the starts alone.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from apps.scheduler.slurm_jobs import SlurmJob

REQUEUE_SLACK = dt.timedelta(seconds=10)
ENDED = frozenset({"completed", "cancelled", "failed"})


@dataclass
class Attempt:
    """One attempt of a job as KUAE keeps it (JobAttempt)."""

    key: int
    state: str
    status: str
    started_at: dt.datetime | None = None
    ended_at: dt.datetime | None = None
    hostlist: str = ""
    changed: bool = False


@dataclass
class JobState:
    """A job while records are applied: as stored (pk set) or new (pk None)."""

    external_id: str
    pk: int | None = None
    name: str = ""
    submitted_at: dt.datetime | None = None
    created_at: dt.datetime | None = None
    status: str = "pending"
    started_at: dt.datetime | None = None
    ended_at: dt.datetime | None = None
    gpu_count: int | None = None
    restart_count: int = 0
    array_job_id: int | None = None
    array_task_id: int | None = None
    hostnames: tuple[str, ...] | None = None  # None: unchanged (not loaded) for stored jobs
    attempts: dict[int, Attempt] = field(default_factory=dict)
    changed: bool = False
    nodes_changed: bool = False

    def values(self) -> tuple[object, ...]:
        """The fields an update writes, in `UPDATED_FIELDS` order."""
        return (
            self.name,
            self.submitted_at,
            self.status,
            self.started_at,
            self.ended_at,
            self.gpu_count or 0,
            self.restart_count,
            self.array_job_id,
            self.array_task_id,
        )


UPDATED_FIELDS = (
    "name",
    "submitted_at",
    "status",
    "started_at",
    "ended_at",
    "gpu_count",
    "restart_count",
    "array_job_id",
    "array_task_id",
)


def _near(a: dt.datetime | None, b: dt.datetime | None) -> bool:
    return a is not None and b is not None and abs(a - b) <= REQUEUE_SLACK


def job_for(candidates: Sequence[JobState], record: SlurmJob) -> JobState | None:
    """The known job (same cluster and id, newest last) this record is an attempt of, or
    None: a new job (rules in the module docstring)."""
    submitted = record.submitted_at
    for job in candidates:
        if record.key in job.attempts or (submitted and job.submitted_at == submitted):
            return job
    if submitted is None:
        return candidates[-1] if candidates else None
    for job in candidates:
        if any(_near(submitted, a.ended_at) for a in job.attempts.values()):
            return job
        if record.ended_at and _near(record.ended_at, _first_submit(job)):
            return job
    if record.restart_cnt:
        for job in reversed(candidates):
            if job.status not in ENDED and (
                job.submitted_at is None or job.submitted_at < submitted
            ):
                return job
    for job in reversed(candidates):
        if job.submitted_at is None and (
            job.created_at is None or job.created_at >= submitted - REQUEUE_SLACK
        ):
            return job
    return None


def _first_submit(job: JobState) -> dt.datetime | None:
    if job.attempts:
        return dt.datetime.fromtimestamp(min(job.attempts), tz=dt.UTC)
    return job.submitted_at


def apply(job: JobState, record: SlurmJob, *, gpus_per_node: int, now: dt.datetime) -> None:
    """Fold one record (an attempt) into the job and recompute the job's fields."""
    before = job.values()
    known = job.attempts.get(record.key)
    stale = known is not None and known.status in ENDED and record.status not in ENDED
    if not stale:  # an attempt seen ended stays ended, whatever an older answer said
        attempt = Attempt(
            key=record.key,
            state=record.state,
            status=record.status,
            started_at=record.started_at or (known.started_at if known else None),
            ended_at=record.ended_at,
            hostlist=record.hostlist or (known.hostlist if known else ""),
            changed=True,
        )
        if known is None or _attempt_tuple(known) != _attempt_tuple(attempt):
            job.attempts[record.key] = attempt
    newest = job.attempts[max(job.attempts)]
    is_newest = record.key == newest.key and not stale
    if record.submitted_at and (job.submitted_at is None or record.submitted_at < job.submitted_at):
        job.submitted_at = record.submitted_at
    starts = [a.started_at for a in job.attempts.values() if a.started_at]
    if job.started_at:
        starts.append(job.started_at)
    job.started_at = min(starts) if starts else None
    job.status = newest.status
    if newest.status in ENDED:
        job.ended_at = newest.ended_at or job.ended_at or now
    else:
        job.ended_at = None
    started = sum(1 for a in job.attempts.values() if a.started_at)
    job.restart_count = max(job.restart_count, record.restart_cnt or 0, started - 1)
    if is_newest:
        job.name = record.name
        job.array_job_id = record.array_job_id
        job.array_task_id = record.array_task_id
        if record.hostnames and tuple(record.hostnames) != job.hostnames:
            job.hostnames = tuple(record.hostnames)
            job.nodes_changed = True
        if record.gpus is not None:
            job.gpu_count = record.gpus
        elif job.gpu_count is None or job.nodes_changed:
            job.gpu_count = len(job.hostnames or ()) * gpus_per_node
    if job.gpu_count is None:
        job.gpu_count = 0
    if job.values() != before:
        job.changed = True


def _attempt_tuple(a: Attempt) -> tuple[object, ...]:
    return (a.state, a.started_at, a.ended_at, a.hostlist)
