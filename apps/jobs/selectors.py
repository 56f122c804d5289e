"""Reads of jobs for pages and the API."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import (
    Avg,
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    Max,
    Min,
    QuerySet,
    Sum,
)
from django.db.models.functions import Floor

from apps.common.dbfuncs import Epoch
from apps.common.downsample import downsample_indices
from apps.common.sql import epoch_seconds
from apps.jobs.choices import JobStatus
from apps.jobs.hang import STALL_STEPS, RankView, Verdict, judge, stall_window
from apps.jobs.hang_inputs import STEP_TIME_WINDOW, rank_view
from apps.jobs.mfu import mfu_of
from apps.jobs.models import (
    Checkpoint,
    Job,
    JobMetric,
    NodeStepMetric,
    Rank,
    RankStack,
    known_blocking_sql,
)

MAX_POINTS_DEFAULT = 2_000
MAX_POINTS_LIMIT = 10_000


def job_list(*, cluster: str | None = None, status: str | None = None) -> QuerySet[Job]:
    """Jobs, newest first, with their cluster joined."""
    qs = Job.objects.select_related("cluster").order_by("-started_at", "-id")
    if cluster:
        qs = qs.filter(cluster__name=cluster)
    if status:
        qs = qs.filter(status=status)
    return qs


def running_jobs(*, cluster_id: int) -> list[Job]:
    """A cluster's running jobs, largest first."""
    return list(
        Job.objects.filter(cluster_id=cluster_id, status=JobStatus.RUNNING)
        .select_related("cluster")
        .order_by("-gpu_count", "id")
    )


def running_node_ids(cluster_id: int) -> set[int]:
    """Ids of the cluster's nodes that run a `running` job, in one query."""
    return set(
        Job.nodes.through.objects.filter(
            job__cluster_id=cluster_id, job__status=JobStatus.RUNNING
        ).values_list("node_id", flat=True)
    )


def job_metric_series(
    *,
    job: Job,
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
    max_points: int = MAX_POINTS_DEFAULT,
) -> dict[str, list[Any]]:
    """A job's job-wide samples as columns, downsampled shape-preserving to `max_points`.

    Columns: ts (epoch seconds), step, step_time_s, tokens_per_s, loss (float, or the text
    of a non-finite value), mfu.
    """
    where = ["job_id = %s"]
    params: list[Any] = [job.pk]
    if start is not None:
        where.append("ts >= %s")
        params.append(connection.ops.adapt_datetimefield_value(start))
    if end is not None:
        where.append("ts < %s")
        params.append(connection.ops.adapt_datetimefield_value(end))
    table = JobMetric._meta.db_table
    columns = f"{epoch_seconds('ts')}, step, step_time_s, tokens_per_s, loss, nonfinite"
    clause = " AND ".join(where)
    with connection.cursor() as cursor:
        # A long window holds more extremes (min/max per 5-minute bucket, marked at ingest)
        # than points wanted: read only those, plus the window's first and last sample.
        cursor.execute(
            f"SELECT {columns} FROM {table} WHERE {clause} AND extreme ORDER BY ts", params
        )
        rows = cursor.fetchall()
        if len(rows) > max_points:
            for order in ("ASC", "DESC"):
                cursor.execute(
                    f"SELECT {columns} FROM {table} WHERE {clause} ORDER BY ts {order} LIMIT 1",
                    params,
                )
                rows.extend(cursor.fetchall())
            rows = sorted(set(rows), key=lambda r: r[0])
        else:
            cursor.execute(f"SELECT {columns} FROM {table} WHERE {clause} ORDER BY ts", params)
            rows = cursor.fetchall()
    if not rows:
        return {k: [] for k in ("ts", "step", "step_time_s", "tokens_per_s", "loss", "mfu")}
    ts = np.fromiter((r[0] for r in rows), dtype=np.float64, count=len(rows))
    tps = np.fromiter((r[3] for r in rows), dtype=np.float64, count=len(rows))
    keep = downsample_indices(ts, tps, max_points)
    factor = job.mfu_factor()
    picked = [rows[i] for i in keep.tolist()]
    return {
        "ts": [r[0] for r in picked],
        "step": [r[1] for r in picked],
        "step_time_s": [r[2] for r in picked],
        "tokens_per_s": [r[3] for r in picked],
        "loss": [_loss(r[4], r[5]) for r in picked],
        "mfu": [mfu_of(r[3], factor) for r in picked],
    }


def _loss(value: float | None, nonfinite: str) -> float | str | None:
    if value is not None or "loss=" not in nonfinite:
        return value
    return nonfinite.split("loss=", 1)[1].split()[0]


def job_detail(*, pk: int) -> Job | None:
    """One job with its cluster loaded, or None."""
    return Job.objects.select_related("cluster").filter(pk=pk).first()


@dataclass(frozen=True)
class CheckpointMark:
    """One mark on the job chart's checkpoint strip: the `count` checkpoints (often one)
    saved within one slice of the job's run."""

    first: float  # epoch seconds of the first save in the mark
    last: float
    count: int
    step_lo: int
    step_hi: int
    blocking_lo: float  # seconds training paused, shortest and longest save in the mark
    blocking_hi: float


def checkpoint_marks(*, job: Job, limit: int, now: dt.datetime) -> list[CheckpointMark]:
    """The job's checkpoints as at most about `limit` marks in time order, in one query: its
    run cut into `limit` equal slices, one mark per slice holding any. A slice holding one
    checkpoint is that checkpoint; an hour of a month-long run is one mark of several."""
    start = job.started_at
    if start is None:  # not started: any checkpoint still gets a place
        start = job.checkpoints.aggregate(t=Min("saved_at"))["t"]
        if start is None:
            return []
    end = max(job.ended_at or now, start + dt.timedelta(seconds=limit))
    width = (end - start).total_seconds() / limit
    rows = (
        job.checkpoints.annotate(slice=Floor((Epoch("saved_at") - start.timestamp()) / width))
        .values("slice")
        .annotate(
            first=Min(Epoch("saved_at")),
            last=Max(Epoch("saved_at")),
            count=Count("id"),
            step_lo=Min("step"),
            step_hi=Max("step"),
            blocking_lo=Min(known_blocking_sql()),
            blocking_hi=Max(known_blocking_sql()),
        )
        .order_by("slice")
    )
    return [
        CheckpointMark(
            first=float(r["first"]),
            last=float(r["last"]),
            count=int(r["count"]),
            step_lo=int(r["step_lo"]),
            step_hi=int(r["step_hi"]),
            blocking_lo=float(r["blocking_lo"]),
            blocking_hi=float(r["blocking_hi"]),
        )
        for r in rows
    ]


def checkpoint_cost_mean(*, cluster_id: int, since: dt.datetime) -> float | None:
    """The mean blocking time (seconds) of the cluster's checkpoints saved since `since`
    that blocked at all (one past the bound on durations as none); None when there is none."""
    cost: float | None = Checkpoint.objects.filter(
        job__cluster_id=cluster_id, saved_at__gte=since, blocking_s__gt=0
    ).aggregate(c=Avg(known_blocking_sql()))["c"]
    return cost


# --- Ranks and the hang verdict (docs/checks.md, `job_hang`) -------------------------------

_RANK_COLUMNS = (
    "rank",
    "world_size",
    "node__hostname",
    "local_rank",
    "pid",
    "started_at",
    "report_at",
    "first_report_at",
    "stalled_since",
    "last_step",
    "stalled_s",
    "in_collective",
    "resumed_at",
    "stack_id",
    "stack__digest",
    "stack__frame",
    "stack__collective",
)


@dataclass(frozen=True)
class JobRanks:
    """One attempt's ranks as stored: `rows` (dicts of _RANK_COLUMNS, by rank), the stacks
    they are in (digest → frames, each once) and the views the verdict reads."""

    attempt: int | None  # None: no rank registered
    rows: list[dict[str, Any]]
    stacks: dict[str, list[dict[str, Any]]]
    views: list[RankView]

    @property
    def world_size(self) -> int | None:
        """The largest world size the attempt's ranks registered with."""
        return max((r["world_size"] for r in self.rows), default=None)


@dataclass(frozen=True, slots=True)
class PhaseTotal:
    """A job's phases of one name: how many and how long in all (seconds, GPU-hours)."""

    name: str
    count: int
    seconds: float
    gpu_hours: float


def job_phase_totals(job: Job) -> list[PhaseTotal]:
    """Time the run spent not training, by phase name, longest first (one query)."""
    span = ExpressionWrapper(F("end") - F("start"), output_field=DurationField())
    rows = job.phases.values("name").annotate(n=Count("id"), total=Sum(span)).order_by("name")
    totals = []
    for row in rows:
        seconds = row["total"].total_seconds() if row["total"] is not None else 0.0
        totals.append(PhaseTotal(row["name"], row["n"], seconds, seconds * job.gpu_count / 3600.0))
    return sorted(totals, key=lambda t: (-t.seconds, t.name))


def current_attempt(job: Job) -> int | None:
    """The job's highest attempt, or None before any rank registered."""
    top: int | None = Rank.objects.filter(job=job).aggregate(a=Max("attempt"))["a"]
    return top


def job_has_stalled_rank(job: Job) -> bool:
    """Whether a rank of the job's current attempt reports a stall now: its newest report is
    a stall, not `resumed`, and newer than the job's last progress (which ends any stall
    before it). Two small queries."""
    attempt = current_attempt(job)
    if attempt is None:
        return False
    stalled = Rank.objects.filter(
        job=job, attempt=attempt, report_at__isnull=False, resumed_at__isnull=True
    )
    if job.progress_at is not None:
        stalled = stalled.filter(report_at__gt=job.progress_at)
    return stalled.exists()


def job_ranks(job: Job, attempt: int | None = None) -> JobRanks:
    """The ranks of the job's current attempt (or of `attempt`), in three queries whatever
    their number: the attempt, the rows with their node and stack, the stacks' frames."""
    if attempt is None:
        attempt = current_attempt(job)
    if attempt is None:
        return JobRanks(None, [], {}, [])
    rows = list(
        Rank.objects.filter(job=job, attempt=attempt).order_by("rank").values(*_RANK_COLUMNS)
    )
    stack_ids = sorted({r["stack_id"] for r in rows if r["stack_id"] is not None})
    stacks = dict(RankStack.objects.filter(pk__in=stack_ids).values_list("digest", "frames"))
    views = [rank_view(r) for r in rows]
    return JobRanks(attempt, rows, stacks, views)


def job_step_times(job: Job, window: int = STALL_STEPS) -> list[float]:
    """The step times of the job's newest `window` samples, oldest first: job-wide ones,
    else — for a job whose ranks report only per node — per-node ones near its progress."""
    times = list(
        JobMetric.objects.filter(job=job)
        .order_by("-ts")
        .values_list("step_time_s", flat=True)[:window]
    )
    if not times and job.progress_at is not None:
        times = list(
            NodeStepMetric.objects.filter(job=job, ts__gte=job.progress_at - STEP_TIME_WINDOW)
            .order_by("-ts")
            .values_list("step_time_s", flat=True)[:window]
        )
    return times[::-1]


def job_stall_s(job: Job) -> float:
    """The job's stall window: max(60 s, 5 × its median step time of the last 50 steps)."""
    return stall_window(job_step_times(job))


def job_verdict(job: Job, now: dt.datetime, *, ranks: JobRanks | None = None) -> Verdict:
    """The verdict on the job's current attempt (or on `ranks`, already read) at `now`.
    Reads only."""
    if ranks is None:
        ranks = job_ranks(job)
    return judge(ranks.views, progress_at=job.progress_at, stall_s=job_stall_s(job), now=now)
