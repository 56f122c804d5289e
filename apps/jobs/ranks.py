"""The writes of a job's ranks: registrations (`POST jobs/{id}/ranks/`) and stall reports
(`POST ingest/stalls/`), both all or nothing (docs/api.md, Jobs).

Attempts are the server's: a job's current attempt is the highest number its ranks have.
A registration of rank r that started at t

- joins the current attempt when r is not in it (nor in an older attempt at t or later:
  a re-sent registration of an earlier run changes nothing);
- updates r's row when it is there with the same (started_at, pid) — a re-sent
  registration, which changes nothing — or when the row was made by a stall report from
  the same process (no `started_at` yet, no report before t);
- begins attempt current+1 when r is there with another (started_at, pid) and t is later
  (a restarted job registers afresh); an older registration is ignored.

A stall report updates its rank's row in the current attempt (registering the rank when
it is not there), unless it is not newer than the row's newest report (or older than the
process): a duplicate, accepted and ignored, so a retried batch is stored once. Stacks are
stored once each, by digest. One batch costs a handful of statements whatever its size:
the rank rows read and updated in bulk (apps/common/bulk.py), one INSERT of new stacks. A
single report of a registered rank, what a hung job's ranks send, is stored before this
path by apps/jobs/stall_store.py in one read and one write, under the same rules.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.db.models import Max

from apps.common.bulk import among, insert_ignore, update_many
from apps.common.errors import BatchError
from apps.fleet.scope import refuse, require_nodes
from apps.fleet.validators import nodes_named
from apps.jobs.models import Job, Rank, RankStack
from apps.jobs.rank_intake import MAX_WORLD, RankItem, StallReport
from apps.jobs.readers import job_progressed
from apps.jobs.scope import require_jobs, require_own_ranks
from apps.jobs.stacks import Stack

_SHOWN = 100  # unknown names one 400 lists


def _node_ids(
    pairs: Sequence[tuple[int, str]], key: Any, clusters: dict[int, str]
) -> dict[tuple[int, str], int]:
    """(cluster id, hostname) → node id for every pair; a BatchError naming `key(i)` for
    each pair i whose node the cluster does not have."""
    by_cluster: dict[int, set[str]] = {}
    for cluster_id, hostname in pairs:
        by_cluster.setdefault(cluster_id, set()).add(hostname)
    known = {
        (cluster_id, hostname): node.pk
        for cluster_id, hostnames in by_cluster.items()
        for hostname, node in nodes_named(cluster_id=cluster_id, hostnames=hostnames).nodes.items()
    }
    unknown = [i for i, pair in enumerate(pairs) if pair not in known]
    if unknown:
        raise BatchError(
            {key(i): [f"unknown node in cluster {clusters[pairs[i][0]]}"] for i in unknown[:_SHOWN]}
        )
    return known


def world_bound(job: Job) -> int:
    """The largest world size a rank of `job` may give: its GPU count (any number up to the
    intake's bound while the job's count is unknown, 0)."""
    return job.gpu_count if job.gpu_count > 0 else MAX_WORLD


def _check_world(job: Job, sizes: Sequence[tuple[int, int | None, int]], key: Any) -> None:
    """A BatchError naming `key(i, field)` for each item `(i, world size, rank)` whose world
    size, or whose rank, is past the job's GPU count: a job's ranks are capped by its size
    (an attempt holds at most `world_size` ranks, `world_size` at most the job's
    `gpu_count`)."""
    bound = world_bound(job)
    errors: dict[str, list[str]] = {}
    for i, world, rank in sizes:
        if world is not None and world > bound:
            errors[key(i, "world_size")] = [f"must be at most the job's gpu_count ({bound:,})"]
        elif rank >= bound:
            errors[key(i, "rank")] = [f"must be less than the job's gpu_count ({bound:,})"]
        if len(errors) >= _SHOWN:
            break
    if errors:
        raise BatchError(errors)


def _lock_job(job_id: int) -> None:
    """Hold the job's row until the transaction ends: one writer of its rank rows' set
    (new rows, new attempts) at a time."""
    list(Job.objects.select_for_update().filter(pk=job_id).values_list("pk"))


def _nodes_join(job_id: int, node_ids: Iterable[int]) -> None:
    """Add to the job's nodes those its ranks run on that it does not list yet: a rank
    running there proves the job runs there."""
    wanted = set(node_ids)
    if not wanted:
        return
    through = Job.nodes.through
    have = set(through.objects.filter(job_id=job_id).values_list("node_id", flat=True))
    missing = sorted(wanted - have)
    if missing:
        through.objects.bulk_create(
            [through(job_id=job_id, node_id=n) for n in missing], ignore_conflicts=True
        )


def current_attempts(job_ids: Sequence[int]) -> dict[int, int]:
    """job id → its highest attempt (jobs without ranks are left out): one query a job,
    each the first entry of its (job, attempt, rank) index (a GROUP BY would read every
    rank of the job)."""
    out = {}
    for job_id in job_ids:
        top = Rank.objects.filter(job_id=job_id).aggregate(top=Max("attempt"))["top"]
        if top is not None:
            out[job_id] = int(top)
    return out


SMALL_UPDATE = 100  # rows updated one statement each (by id); more: apps/common/bulk.py


def _update(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Set `columns` on the rank rows `(id, *values)`. A few rows (one rank's report, a
    node's eight) are updated by id with executemany: PostgreSQL's staged `UPDATE … FROM`
    (update_many) costs a temp table's truncation and a join planned without statistics,
    several times a small batch's own work."""
    if len(rows) > SMALL_UPDATE or connection.vendor != "postgresql":
        update_many(Rank._meta.db_table, ("id",), columns, rows)
        return
    sets = ", ".join(f'"{c}" = %s' for c in columns)
    with connection.cursor() as cursor:
        cursor.executemany(
            f'UPDATE {Rank._meta.db_table} SET {sets} WHERE "id" = %s',
            [(*row[1:], row[0]) for row in rows],
        )


# --- Registrations -----------------------------------------------------------------------


@dataclass(slots=True)
class _Registration:
    """A rank's newest row while a registration batch is applied."""

    id: int | None  # None: to be inserted
    attempt: int
    rank: int
    world_size: int
    node_id: int
    local_rank: int | None
    pid: int | None
    started_at: dt.datetime | None
    report_at: dt.datetime | None
    changed: bool = False


@transaction.atomic
def ranks_register(
    *,
    job: Job,
    items: Sequence[RankItem],
    now: dt.datetime,
    user: Any = None,
    new_attempts: bool = True,
) -> tuple[int, int]:
    """Register a validated batch of ranks for `job` (the attempt rule: this module's
    docstring). Each node must be the job's cluster's: an unknown one rejects the whole
    batch (`ranks[i].node`), as does a world size past the job's GPU count. A node's token
    (`user`) registers only ranks that are not registered on another node in the current
    attempt; a new attempt begins only with `new_attempts` (apps/jobs/scope.py):
    otherwise OutOfScope, nothing stored. Returns (accepted, the attempt the batch ended
    in)."""
    _check_world(
        job,
        [(i, it.world_size, it.rank) for i, it in enumerate(items)],
        lambda i, name: f"ranks[{i}].{name}",
    )
    clusters = {job.cluster_id: job.cluster.name}
    node_ids = _node_ids(
        [(job.cluster_id, it.node) for it in items], lambda i: f"ranks[{i}].node", clusters
    )
    _lock_job(job.pk)
    attempt = max(current_attempts([job.pk]).get(job.pk, 0), 1)
    require_own_ranks(user, job, [it.rank for it in items], attempt=attempt)
    first_attempt = attempt
    newest: dict[int, _Registration] = {}
    for pk, att, rank, world, node_id, local, pid, started, report_at in among(
        Rank.objects.filter(job_id=job.pk), "rank", sorted({it.rank for it in items})
    ).values_list(
        "pk",
        "attempt",
        "rank",
        "world_size",
        "node_id",
        "local_rank",
        "pid",
        "started_at",
        "report_at",
    ):
        if rank not in newest or newest[rank].attempt < att:
            newest[rank] = _Registration(
                pk, att, rank, world, node_id, local, pid, started, report_at
            )
    loaded = list(newest.values())
    inserts: list[_Registration] = []
    used: set[int] = set()
    for it in items:
        node_id = node_ids[(job.cluster_id, it.node)]
        prev = newest.get(it.rank)
        fresh = False
        if prev is None:
            fresh = True
        elif prev.attempt < attempt:  # from an earlier attempt: only a later process joins
            fresh = prev.started_at is None or it.started_at > prev.started_at
            if not fresh:
                continue
        elif prev.started_at is None:  # made by a stall report
            if prev.report_at is not None and it.started_at > prev.report_at:
                attempt, fresh = attempt + 1, True  # its reports came from an earlier process
            else:
                prev.started_at, prev.pid, prev.changed = it.started_at, it.pid, True
                _fill(prev, it, node_id)
        elif (prev.started_at, prev.pid) == (it.started_at, it.pid):
            _fill(prev, it, node_id)
        elif it.started_at > prev.started_at:
            attempt, fresh = attempt + 1, True  # a restarted job registers afresh
        else:
            continue  # older than the row it would replace
        if fresh:
            row = _Registration(
                None,
                attempt,
                it.rank,
                it.world_size,
                node_id,
                it.local_rank,
                it.pid,
                it.started_at,
                None,
            )
            newest[it.rank] = row
            inserts.append(row)
        used.add(node_id)
    if attempt > first_attempt and not new_attempts:
        refuse(f"a new attempt of job {job.pk}'s ranks (a node's token that does not hold rank 0)")
    insert_ignore(
        Rank._meta.db_table,
        (
            "job_id",
            "attempt",
            "rank",
            "world_size",
            "node_id",
            "local_rank",
            "pid",
            "started_at",
            "registered_at",
        ),
        (
            (
                job.pk,
                r.attempt,
                r.rank,
                r.world_size,
                r.node_id,
                r.local_rank,
                r.pid,
                r.started_at,
                now,
            )
            for r in inserts
        ),
    )
    _update(
        ("world_size", "node_id", "local_rank", "pid", "started_at"),
        [
            (r.id, r.world_size, r.node_id, r.local_rank, r.pid, r.started_at)
            for r in loaded
            if r.changed
        ],
    )
    _nodes_join(job.pk, used)
    if attempt > first_attempt:  # a restart: its interruption's road back (docs/incidents.md)
        job_progressed(job.pk)
    return len(items), attempt


def _fill(row: _Registration, it: RankItem, node_id: int) -> None:
    """Update a row with what its registration says (nothing when it says the same)."""
    values = {"world_size": it.world_size, "node_id": node_id}
    if it.local_rank is not None:
        values["local_rank"] = it.local_rank
    if it.pid is not None:
        values["pid"] = it.pid
    for name, value in values.items():
        if getattr(row, name) != value:
            setattr(row, name, value)
            row.changed = True


# --- Stall reports -----------------------------------------------------------------------


REPORT_COLUMNS = (
    "report_at",
    "first_report_at",
    "stalled_since",
    "last_step",
    "stalled_s",
    "in_collective",
    "stack_id",
    "resumed_at",
)


@dataclass(slots=True)
class Live:
    """A rank row's newest report while a batch of reports is applied."""

    id: int
    started_at: dt.datetime | None
    report_at: dt.datetime | None
    first_report_at: dt.datetime | None
    stalled_since: dt.datetime | None
    last_step: int | None
    stalled_s: float | None
    in_collective: bool | None
    stack_id: int | None
    resumed_at: dt.datetime | None
    stack: Stack | None = field(default=None)  # a new stack, its id not known yet
    changed: bool = False

    def apply(self, report: StallReport) -> None:
        """Take `report` as the newest, unless it is not newer (a duplicate) or older than
        the process."""
        if self.report_at is not None and report.ts <= self.report_at:
            return
        if self.started_at is not None and report.ts < self.started_at:
            return
        if report.resumed:
            self.resumed_at = report.ts
        else:
            begun = report.ts - dt.timedelta(seconds=report.stalled_s or 0.0)
            new_stall = (
                self.report_at is None
                or self.resumed_at is not None
                # it stalled again after the newest report: its `resumed` one was lost
                or (report.stalled_s is not None and begun > self.report_at)
            )
            if new_stall:
                self.first_report_at, self.stalled_since = report.ts, begun
                self.resumed_at = None
        self.report_at = report.ts
        if report.last_step is not None:
            self.last_step = report.last_step
        self.stalled_s = report.stalled_s
        self.in_collective = report.in_collective
        if report.stack is not None or not report.resumed:  # a resumed one keeps the stall's
            self.stack = report.stack
            self.stack_id = None
        self.changed = True


def _report_key(batch: bool) -> Any:
    return (lambda i, name: f"reports[{i}].{name}") if batch else (lambda i, name: name)


@transaction.atomic
def stalls_ingest(
    *, reports: Sequence[StallReport], user: Any, now: dt.datetime, batch: bool = True
) -> int:
    """Store a validated batch of stall reports, all or nothing; returns how many were
    accepted (duplicates included). Every job and node must exist (400 naming
    `reports[i].job` / `.node`; a single report's `job` / `node` when not `batch`), and
    each must be `user`'s to write for (OutOfScope, a 403)."""
    key = _report_key(batch)
    jobs: dict[int, Job] = {
        j.pk: j
        for j in Job.objects.filter(pk__in={r.job for r in reports}).select_related("cluster")
    }
    # A scoped agent's unknown job is refused as one outside its scope (no existence oracle).
    require_jobs(user, list(jobs.values()), {r.job for r in reports})
    unknown = [i for i, r in enumerate(reports) if r.job not in jobs]
    if unknown:
        raise BatchError({key(i, "job"): ["unknown job"] for i in unknown[:_SHOWN]})
    require_nodes(user, {r.node for r in reports})
    for job_id, job in jobs.items():
        _check_world(
            job,
            [(i, r.world_size, r.rank) for i, r in enumerate(reports) if r.job == job_id],
            lambda i, name: key(i, name),
        )
    clusters = {j.cluster_id: j.cluster.name for j in jobs.values()}
    node_ids = _node_ids(
        [(jobs[r.job].cluster_id, r.node) for r in reports], lambda i: key(i, "node"), clusters
    )
    by_job: dict[int, list[StallReport]] = defaultdict(list)
    for r in reports:
        by_job[r.job].append(r)
    attempts = current_attempts(sorted(by_job))
    for job_id, mine in by_job.items():  # a node's token: only ranks registered on its nodes
        require_own_ranks(user, jobs[job_id], [r.rank for r in mine], attempt=attempts.get(job_id))
    live: list[Live] = []
    for job_id, mine in by_job.items():
        job = jobs[job_id]
        live += _job_rows(job, mine, attempts.get(job_id), node_ids, now)
    _stacks_store(live)
    _update(
        REPORT_COLUMNS,
        [(r.id, *(getattr(r, c) for c in REPORT_COLUMNS)) for r in live if r.changed],
    )
    return len(reports)


_LIVE_COLUMNS = (
    "pk",
    "rank",
    "started_at",
    "report_at",
    "first_report_at",
    "stalled_since",
    "last_step",
    "stalled_s",
    "in_collective",
    "stack_id",
    "resumed_at",
)


def _read_live(
    job_id: int, attempt: int, ranks: Sequence[int], *, lock: bool = True
) -> dict[int, Live]:
    """rank → its row in the attempt; `lock`: locked (on PostgreSQL) until the batch
    commits."""
    rows = among(Rank.objects.filter(job_id=job_id, attempt=attempt), "rank", ranks)
    if lock:
        rows = rows.select_for_update()
    return {rank: Live(pk, *rest) for pk, rank, *rest in rows.values_list(*_LIVE_COLUMNS)}


def _job_rows(
    job: Job,
    reports: Sequence[StallReport],
    attempt: int | None,
    node_ids: dict[tuple[int, str], int],
    now: dt.datetime,
) -> list[Live]:
    """The job's reports applied to its rank rows of the current attempt (registering
    the ranks that have none); returns the rows."""
    ranks = sorted({r.rank for r in reports})
    # Read, then lock: the rows when all are there; the job first when rows are to be made
    # (as a registration does: one order of locks, no deadlock).
    locks = connection.features.has_select_for_update
    rows = _read_live(job.pk, attempt, ranks, lock=False) if attempt is not None else {}
    if attempt is not None and len(rows) == len(ranks) and locks:
        rows = _read_live(job.pk, attempt, ranks)
    if len(rows) < len(ranks):
        _lock_job(job.pk)  # rows to make: one maker at a time, and the attempt may have moved
        attempt = max(current_attempts([job.pk]).get(job.pk, 0), 1)
        rows = _read_live(job.pk, attempt, ranks)
        first: dict[int, StallReport] = {}
        for r in sorted(reports, key=lambda r: r.ts):
            if r.rank not in rows:
                first.setdefault(r.rank, r)
        if first:
            known = _largest_world(job, attempt)
            insert_ignore(
                Rank._meta.db_table,
                ("job_id", "attempt", "rank", "world_size", "node_id", "registered_at"),
                (
                    (
                        job.pk,
                        attempt,
                        r.rank,
                        max(r.world_size or known, r.rank + 1),
                        node_ids[(job.cluster_id, r.node)],
                        now,
                    )
                    for r in first.values()
                ),
            )
            rows.update(_read_live(job.pk, attempt, sorted(first)))
            _nodes_join(job.pk, {node_ids[(job.cluster_id, r.node)] for r in first.values()})
    for r in sorted(reports, key=lambda r: r.ts):
        rows[r.rank].apply(r)
    return list(rows.values())


def _largest_world(job: Job, attempt: int) -> int:
    """The world size a rank registered by a report without one gets: the largest its
    attempt knows, else the job's GPU count."""
    known = Rank.objects.filter(job_id=job.pk, attempt=attempt).aggregate(w=Max("world_size"))
    return int(known["w"] or job.gpu_count or 1)


def _stacks_store(rows: Sequence[Live]) -> None:
    """Give each row's new stack its id: the stored one of its digest, or one INSERT of
    all the stacks not stored yet."""
    stacks = {r.stack.digest: r.stack for r in rows if r.changed and r.stack is not None}
    if not stacks:
        return
    ids = dict(among(RankStack.objects.all(), "digest", sorted(stacks)).values_list("digest", "pk"))
    missing = [s for d, s in stacks.items() if d not in ids]
    if missing:
        stacks_insert(missing)
        ids.update(
            among(RankStack.objects.all(), "digest", [s.digest for s in missing]).values_list(
                "digest", "pk"
            )
        )
    for r in rows:
        if r.changed and r.stack is not None:
            r.stack_id = ids[r.stack.digest]


def stacks_insert(stacks: Sequence[Stack]) -> None:
    """Store `stacks` (one INSERT); one stored meanwhile by another batch is left as it is:
    its row is the same."""
    RankStack.objects.bulk_create(
        [
            RankStack(digest=s.digest, frames=s.as_json(), frame=s.frame, collective=s.collective)
            for s in stacks
        ],
        ignore_conflicts=True,
    )
