"""The write of `POST ingest/stalls/` (docs/api.md): a single report, what every rank of a
hung job sends within a minute, in one read and one write; anything else as a batch
(apps/jobs/ranks.py, `stalls_ingest`).

When a 10,000-rank job hangs, 10,000 single reports come within a minute, each about a
rank its job's current attempt already has. Such a report is read in one query — the
rank's row in the current attempt (locked until the report commits, as a batch locks its
rows), with its job's cluster and size, the node the report names and, for a node's token,
whether the job runs on one of its nodes — and written in one UPDATE that takes the stack's
id by its digest (the stack is inserted, once, only when that finds none). A report every
rule lets through costs those two statements (one for a duplicate); one that some rule
refuses, or about a rank the current attempt does not have, is answered by the batch path,
which then refuses or registers it exactly as it does any batch — nothing is written before.

Its commit waits for PostgreSQL's disk flush like every other write: an accepted report is
never lost to a crash of the database server (docs/operations.md, Measured load).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from apps.fleet.models import Node
from apps.fleet.scope import Scope, scope_of
from apps.jobs.models import Job, Rank, RankStack
from apps.jobs.rank_intake import MAX_WORLD, StallReport
from apps.jobs.ranks import REPORT_COLUMNS, Live, stacks_insert, stalls_ingest

# The tables, named by their models (a renamed table breaks this at once, as ModelSql does).
_TABLES = {
    "rank": Rank._meta.db_table,
    "job": Job._meta.db_table,
    "job_nodes": Job.nodes.through._meta.db_table,
    "node": Node._meta.db_table,
    "stack": RankStack._meta.db_table,
}
# The rank's row as `Live` holds it, then what the rules need (`_allowed`).
_READ = """
SELECT r.id, r.started_at, r.report_at, r.first_report_at, r.stalled_since, r.last_step,
       r.stalled_s, r.in_collective, r.stack_id, r.resumed_at,
       j.cluster_id, j.gpu_count, n.hostname,
       (SELECT named.id FROM {node} named
         WHERE named.cluster_id = j.cluster_id AND named.hostname = %s)
       {{ours}}
  FROM {rank} r JOIN {job} j ON j.id = r.job_id JOIN {node} n ON n.id = r.node_id
 WHERE r.job_id = %s AND r.rank = %s
   AND r.attempt = (SELECT MAX(top.attempt) FROM {rank} top WHERE top.job_id = %s)
""".format(**_TABLES)
# For a node's token: whether the job runs on one of its nodes (apps/jobs/scope.py).
_OURS = """, EXISTS (SELECT 1 FROM {job_nodes} jn JOIN {node} own ON own.id = jn.node_id
                  WHERE jn.job_id = %s AND own.hostname IN ({{names}}))""".format(**_TABLES)
_LIVE = len(REPORT_COLUMNS) + 2  # id, started_at, then the report's columns
_DATETIMES = {1, 2, 3, 4, 9}  # started_at, report_at, first_report_at, stalled_since, resumed_at
_SETS = ", ".join(f"{c} = %s" for c in REPORT_COLUMNS if c != "stack_id")
_STACK_ID = f"(SELECT s.id FROM {_TABLES['stack']} s WHERE s.digest = %s)"
_UPDATE = f"UPDATE {_TABLES['rank']} SET {_SETS}"


@transaction.atomic
def stalls_store(
    *, reports: Sequence[StallReport], user: Any, now: dt.datetime, batch: bool
) -> int:
    """Store a validated body of stall reports, all or nothing, as `stalls_ingest` does
    (same answers, same refusals); returns how many were accepted. A single report (not
    `batch`) of a rank the current attempt has takes the one-read path."""
    if not batch and len(reports) == 1 and _store_one(reports[0], scope_of(user)):
        return 1
    return stalls_ingest(reports=reports, user=user, now=now, batch=batch)


def _store_one(report: StallReport, scope: Scope | None) -> bool:
    """Apply `report` to its rank's row when the current attempt has the rank and every
    rule of `stalls_ingest` lets it through; False, nothing written, otherwise."""
    found = _read(report, scope)
    if found is None or not _allowed(report, scope, found[_LIVE:]):
        return False
    row = Live(*found[:_LIVE])
    row.apply(report)
    if row.changed:
        _write(row)
    return True


def _read(report: StallReport, scope: Scope | None) -> tuple[Any, ...] | None:
    """The rank's row in its job's current attempt (`Live`'s fields, locked until the
    report commits where the database locks rows), then its job's cluster and GPU count,
    its node's hostname, the id of the node the report names in the job's cluster (None: no
    such node) and, for a node's token, whether the job runs on one of its nodes. None: no
    such row."""
    ours = ""  # for a node's token: its part of the SQL, and its parameters
    extra: list[int | str] = []
    if scope is not None and scope.hostnames is not None:
        names = sorted(scope.hostnames)
        ours = _OURS.format(names=", ".join(["%s"] * len(names)))
        extra = [report.job, *names]
    sql = _READ.format(ours=ours)
    if connection.features.has_select_for_update_of:
        sql += " FOR UPDATE OF r"
    with connection.cursor() as cursor:
        cursor.execute(sql, [report.node, *extra, report.job, report.rank, report.job])
        found = cursor.fetchone()
    if found is None:
        return None
    return tuple(_aware(v) if i in _DATETIMES else v for i, v in enumerate(found))


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    """A datetime as the ORM reads it (SQLite's come naive, in UTC)."""
    if value is None or timezone.is_aware(value):
        return value
    return timezone.make_aware(value, connection.timezone)


def _allowed(report: StallReport, scope: Scope | None, facts: Sequence[Any]) -> bool:
    """Whether every rule of `stalls_ingest` lets the report through (`facts`: what
    `_read` gives after the row). The scope's (apps/jobs/scope.py: the job's cluster, a
    node's token's job on its nodes, the report's node and the rank's node its own), the
    world size's (at most the job's GPU count), the node's (one of the job's cluster)."""
    cluster_id, gpu_count, rank_host, named, *ours = facts
    if named is None:
        return False
    if scope is not None:
        if cluster_id != scope.cluster_id:
            return False
        if scope.hostnames is not None and not (
            ours[0] and report.node in scope.hostnames and rank_host in scope.hostnames
        ):
            return False
    bound = gpu_count if gpu_count > 0 else MAX_WORLD  # ranks.world_bound's
    return report.rank < bound and (report.world_size is None or report.world_size <= bound)


def _write(row: Live) -> None:
    """Write the row's report in one UPDATE; a new stack's id is read in it by digest, and
    only when no stack has that digest is the stack inserted (then the UPDATE again)."""
    adapt = connection.ops.adapt_datetimefield_value
    values = [
        adapt(v) if isinstance(v, dt.datetime) else v
        for v in (getattr(row, c) for c in REPORT_COLUMNS if c != "stack_id")
    ]
    with connection.cursor() as cursor:
        if row.stack is None:
            sql = f"{_UPDATE}, stack_id = %s WHERE id = %s"
            cursor.execute(sql, [*values, row.stack_id, row.id])
            return
        digest = row.stack.digest
        sql = f"{_UPDATE}, stack_id = {_STACK_ID} WHERE id = %s"
        guarded = f"{sql} AND EXISTS {_STACK_ID}"
        cursor.execute(guarded, [*values, digest, row.id, digest])
        if cursor.rowcount == 0:
            stacks_insert([row.stack])
            cursor.execute(sql, [*values, digest, row.id])
