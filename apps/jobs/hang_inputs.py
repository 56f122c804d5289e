"""What the hang verdict reads of every running job of a cluster at once
(docs/checks.md, `job_hang`): a fixed number of queries whatever the number of jobs,
ranks or nodes — the recent step times of all the jobs, which of them have ranks and a
rank that reports a stall, and the ranks of the jobs asked for. The one-job readings the
job page makes are `apps.jobs.selectors` (job_step_times, job_ranks), which these give
the same answers as."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import reduce
from operator import or_
from typing import Any

from django.db import connection
from django.db.models import Exists, F, OuterRef, Q, QuerySet, Subquery, Window
from django.db.models.functions import RowNumber

from apps.common.dbfuncs import Epoch, from_epoch
from apps.jobs.hang import RankView
from apps.jobs.models import Job, JobMetric, NodeStepMetric, Rank

# A job's per-node step times count for its stall window when this close to its progress.
STEP_TIME_WINDOW = dt.timedelta(minutes=30)

# What a rank view reads of a rank row (besides its job).
VIEW_COLUMNS = (
    "rank",
    "node__hostname",
    "report_at",
    "resumed_at",
    "last_step",
    "in_collective",
    "stack__frame",
    "stack__collective",
    "stalled_since",
    "first_report_at",
)


def rank_view(row: dict[str, Any]) -> RankView:
    """A rank row (a dict holding VIEW_COLUMNS) as the verdict reads it."""
    return RankView(
        rank=row["rank"],
        node=row["node__hostname"],
        report_at=row["report_at"],
        resumed_at=row["resumed_at"],
        last_step=row["last_step"],
        in_collective=row["in_collective"],
        frame=row["stack__frame"] or "",
        collective=row["stack__collective"] or "",
        stalled_since=row["stalled_since"],
        first_report_at=row["first_report_at"],
    )


def steps_of_jobs(jobs: Sequence[Job], window: int) -> dict[int, list[float]]:
    """job id → the step times of its newest `window` samples, oldest first, as
    `job_step_times` reads one job's: job-wide ones, else — for a job whose ranks report
    only per node — per-node ones near its progress. Two queries at most."""
    out = _job_wide(jobs, window)
    per_node = [j.pk for j in jobs if not out.get(j.pk) and j.progress_at is not None]
    if per_node:
        out.update(_per_node(per_node, window))
    return {j.pk: out.get(j.pk, []) for j in jobs}


def _job_wide(jobs: Sequence[Job], window: int) -> dict[int, list[float]]:
    """The newest `window` job-wide step times of each job, in one query. PostgreSQL reads
    only those, through the (job, ts) index, one lateral subquery a job (a join on a
    per-job bound is planned as a scan of every sample); SQLite numbers each job's samples
    newest first and keeps the first `window`."""
    if not jobs:
        return {}
    ids = [j.pk for j in jobs]
    out: dict[int, list[float]] = defaultdict(list)
    if connection.vendor == "postgresql":
        sql = (
            "SELECT j.id, m.step_time_s FROM unnest(%s::bigint[]) AS j(id) "
            "CROSS JOIN LATERAL (SELECT ts, step_time_s "
            f"FROM {JobMetric._meta.db_table} WHERE job_id = j.id ORDER BY ts DESC LIMIT %s) m "
            "ORDER BY j.id, m.ts"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [ids, window])
            for job_id, step_time in cursor.fetchall():
                out[job_id].append(step_time)
        return out
    return _newest(JobMetric.objects.filter(job_id__in=ids), window)


def _per_node(job_ids: Sequence[int], window: int) -> dict[int, list[float]]:
    """The newest `window` per-node step times of each job within STEP_TIME_WINDOW of its
    progress, in one query (the rows each job's own query would read)."""
    since = F("job__progress_at") - STEP_TIME_WINDOW
    return _newest(NodeStepMetric.objects.filter(job_id__in=job_ids, ts__gte=since), window)


def _newest(samples: QuerySet[Any], window: int) -> dict[int, list[float]]:
    """job id → the step times of the newest `window` of `samples` (JobMetric or
    NodeStepMetric rows), oldest first: the samples numbered per job, newest first."""
    rows = (
        samples.annotate(
            n=Window(RowNumber(), partition_by=[F("job_id")], order_by=[F("ts").desc()]),
        )
        .filter(n__lte=window)
        .values_list("job_id", "n", "step_time_s")
    )
    newest_first: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for job_id, n, step_time in rows:
        newest_first[job_id].append((n, step_time))
    return {
        job_id: [t for _, t in sorted(pairs, reverse=True)]
        for job_id, pairs in newest_first.items()
    }


@dataclass(frozen=True)
class RankState:
    """A job's ranks in brief: its current attempt, and whether a rank of it reports a
    stall (its newest report is a stall, not `resumed`)."""

    attempt: int
    stalled: bool


def rank_states(job_ids: Sequence[int]) -> dict[int, RankState]:
    """job id → its ranks in brief (jobs without ranks are left out), in one query: each
    job's highest attempt is the first entry of its (job, attempt, rank) index."""
    top = Rank.objects.filter(job_id=OuterRef("pk")).order_by("-attempt").values("attempt")[:1]
    stalled = Rank.objects.filter(
        job_id=OuterRef("pk"),
        attempt=OuterRef("top"),
        report_at__isnull=False,
        resumed_at__isnull=True,
    )
    rows = (
        Job.objects.filter(pk__in=job_ids)
        .annotate(top=Subquery(top))
        .filter(top__isnull=False)
        .annotate(stalled=Exists(stalled))
        .values_list("pk", "top", "stalled")
    )
    return {pk: RankState(int(attempt), bool(stall)) for pk, attempt, stall in rows}


# A rank's times, read as Unix seconds: a hung job of 10,000 ranks has 40,000 of them, and
# parsing their text took most of a run (many are equal: each is turned into a time once).
_TIMES = ("report_at", "resumed_at", "stalled_since", "first_report_at")


def rank_views_of(attempts: dict[int, int]) -> dict[int, list[RankView]]:
    """job id → the views of the ranks of the attempt given for it, by rank, in one query
    (one condition per distinct attempt number, not per job)."""
    if not attempts:
        return {}
    by_attempt: dict[int, list[int]] = defaultdict(list)
    for job_id, attempt in attempts.items():
        by_attempt[attempt].append(job_id)
    where = reduce(
        or_, (Q(attempt=a, job_id__in=sorted(ids)) for a, ids in sorted(by_attempt.items()))
    )
    rows: Iterable[dict[str, Any]] = (
        Rank.objects.filter(where)
        .order_by("job_id", "rank")
        .values(
            "job_id",
            *(c for c in VIEW_COLUMNS if c not in _TIMES),
            **{f"{c}_s": Epoch(c) for c in _TIMES},
        )
    )
    times: dict[float, dt.datetime] = {}

    def when(seconds: float | None) -> dt.datetime | None:
        if seconds is None:
            return None
        if seconds not in times:
            times[seconds] = from_epoch(seconds)
        return times[seconds]

    out: dict[int, list[RankView]] = {job_id: [] for job_id in attempts}
    for row in rows:
        for c in _TIMES:
            row[c] = when(row.pop(f"{c}_s"))
        out[row["job_id"]].append(rank_view(row))
    return out
