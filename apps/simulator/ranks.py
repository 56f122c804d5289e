"""The simulated hung job's ranks (docs/checks.md, Ranks): what its ranks' watchdogs would
have told KUAE, so the demo's hang names its culprit as a real one would.

Every rank of the hung job registers (one per GPU, its node's GPUs in order); when the hang
begins, the first rank on the node the hang waits on is stuck in its data loader while every
other rank waits for it in `all_reduce`. Their watchdogs report the stall a minute
in and again every 5 minutes while it lasts: `hung_ranks_write` writes that history up to
now, and the demo's tick (`stalls_renew`) goes on re-reporting for as long as the job stays
hung. Both go through the same validation and services as `POST jobs/{id}/ranks/` and
`POST ingest/stalls/`, in batches within those doors' bounds (10,000 ranks or reports a
batch), as a real job's ranks would send them: the largest job of a 102,400-GPU simulation
has 76,800 ranks.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from apps.jobs.models import Job, Rank
from apps.jobs.rank_intake import MAX_RANKS, MAX_REPORTS, parse_rank_batch, parse_stall_batch
from apps.jobs.ranks import ranks_register, stalls_ingest

T = TypeVar("T")

REPORT_AFTER = dt.timedelta(seconds=60)  # the watchdog's stall window (its floor)
REREPORT = dt.timedelta(minutes=5)  # then a report every 5 minutes

_TRAIN = "/workspace/llm/train.py"
_TORCH = "/usr/local/lib/python3.11/site-packages/torch"
_OUTER = [
    {"file": _TRAIN, "function": "<module>", "line": 212},
    {"file": _TRAIN, "function": "main", "line": 188},
    {"file": _TRAIN, "function": "train_step", "line": 141},
]
# Every rank but the culprit: waiting for the culprit's gradients in all_reduce.
WAITING_STACK = [
    *_OUTER,
    {"file": _TRAIN, "function": "sync_gradients", "line": 97},
    {
        "file": f"{_TORCH}/distributed/c10d_logger.py",
        "function": "wrapper",
        "line": 81,
    },
    {
        "file": f"{_TORCH}/distributed/distributed_c10d.py",
        "function": "all_reduce",
        "line": 2806,
    },
]
# The culprit: its data loader blocked on a storage read, never reaching all_reduce.
CULPRIT_STACK = [
    *_OUTER[:-1],
    {"file": _TRAIN, "function": "train_step", "line": 128},
    {"file": _TRAIN, "function": "load_batch", "line": 64},
    {
        "file": f"{_TORCH}/utils/data/dataloader.py",
        "function": "_BaseDataLoaderIter.__next__",
        "line": 733,
    },
    {"file": "/usr/local/lib/python3.11/threading.py", "function": "Condition.wait", "line": 331},
]


def _iso(at: dt.datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def _report(
    job: Job,
    rank: int,
    host: str,
    world: int,
    *,
    culprit: bool,
    step: int,
    at: dt.datetime,
    since: dt.datetime,
) -> dict[str, Any]:
    """One rank's stall report: the culprit's stack outside the collective, the others' in
    `all_reduce` (a data-parallel loop: every rank last stepped at the same step)."""
    return {
        "job": job.pk,
        "node": host,
        "ts": _iso(at),
        "rank": rank,
        "world_size": world,
        "last_step": step,
        "stalled_s": round((at - since).total_seconds(), 1),
        "stall_s": REPORT_AFTER.total_seconds(),
        "stack": CULPRIT_STACK if culprit else WAITING_STACK,
        "in_collective": not culprit,
    }


def batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """`items` in consecutive slices of at most `size` (a door's bound per batch)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _stalls_send(reports: Sequence[dict[str, Any]], now: dt.datetime) -> None:
    """Take `reports` as `POST ingest/stalls/` would, a batch of at most MAX_REPORTS at a time."""
    for batch in batches(reports, MAX_REPORTS):
        stalls_ingest(
            reports=parse_stall_batch({"reports": list(batch)}, now=now), user=None, now=now
        )


def hung_ranks_write(
    *,
    job: Job,
    hosts: Sequence[str],
    culprit_host: str,
    gpus_per_node: int,
    hang_at: dt.datetime,
    step: int,
    now: dt.datetime,
    started_at: dt.datetime | None = None,
) -> int:
    """Register `job`'s ranks (`gpus_per_node` per host, in order) as started at
    `started_at` (the job's latest attempt; by default when the job did), and write the
    stall reports its watchdogs would have sent from `hang_at` to `now` (the first rank on
    `culprit_host` stuck outside the collective, the rest waiting in `all_reduce`, all
    having last stepped at `step`). Returns the number of reports written."""
    world = len(hosts) * gpus_per_node
    placed = [
        (i * gpus_per_node + local, host)
        for i, host in enumerate(hosts)
        for local in range(gpus_per_node)
    ]
    ranks = [
        {
            "rank": rank,
            "world_size": world,
            "node": host,
            "local_rank": rank % gpus_per_node,
            "started_at": _iso(started_at or job.started_at or hang_at),
        }
        for rank, host in placed
    ]
    for batch in batches(ranks, MAX_RANKS):
        ranks_register(job=job, items=parse_rank_batch({"ranks": list(batch)}, now=now), now=now)
    culprit = hosts.index(culprit_host) * gpus_per_node
    written = 0
    at = hang_at + REPORT_AFTER
    while at <= now:
        reports = [
            _report(
                job, rank, host, world, culprit=rank == culprit, step=step, at=at, since=hang_at
            )
            for rank, host in placed
        ]
        _stalls_send(reports, now)
        written += len(reports)
        at += REREPORT
    return written


def stalls_renew(*, jobs: Sequence[Job], now: dt.datetime) -> int:
    """Re-report, as the ranks' watchdogs would every 5 minutes, the stalls of `jobs` (the
    demo's hung jobs) whose last report is 5 minutes old, each saying what it said before.
    Returns the reports written."""
    reports: list[dict[str, Any]] = []
    for job in jobs:
        rows = Rank.objects.filter(
            job=job,
            report_at__lte=now - REREPORT,
            resumed_at__isnull=True,
            stalled_since__isnull=False,
        ).values_list(
            "rank", "node__hostname", "world_size", "last_step", "stalled_since", "in_collective"
        )
        for rank, host, world, last_step, since, waiting in rows:
            reports.append(
                _report(
                    job,
                    rank,
                    host,
                    world,
                    culprit=waiting is False,
                    step=last_step or 0,
                    at=now,
                    since=since or now,
                )
            )
    _stalls_send(reports, now)
    return len(reports)
