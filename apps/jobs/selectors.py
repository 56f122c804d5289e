"""Reads of jobs for pages and the API."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import Avg, Count, Max, Min, QuerySet
from django.db.models.functions import Floor

from apps.common.dbfuncs import Epoch
from apps.common.downsample import downsample_indices
from apps.common.sql import epoch_seconds
from apps.jobs.choices import JobStatus
from apps.jobs.models import Checkpoint, Job, JobMetric

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
        "mfu": [r[3] * factor if factor is not None else None for r in picked],
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
            blocking_lo=Min("blocking_s"),
            blocking_hi=Max("blocking_s"),
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
    that blocked at all; None when there is none."""
    cost: float | None = Checkpoint.objects.filter(
        job__cluster_id=cluster_id, saved_at__gte=since, blocking_s__gt=0
    ).aggregate(c=Avg("blocking_s"))["c"]
    return cost
