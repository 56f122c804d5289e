"""Day partitions of time-series tables on PostgreSQL: made ahead, fed from DEFAULT, dropped.

A table partitioned by range on one time column (timestamptz) has one partition per UTC
day, named `<table>_pYYYYMMDD`, and a DEFAULT partition that takes any row no day covers,
so an insert never fails for want of a partition and the intake never runs DDL.

- `partitions_ensure` makes today's and the next days' partitions, and a partition for each
  day that has rows sitting in DEFAULT, moving them into it. Beat runs it hourly.
- `partitions_drop_before` is retention: whole days older than the cutoff are detached and
  dropped (no row-by-row delete, no dead rows left to vacuum), and the few rows in DEFAULT
  older than the cutoff are deleted. A day partly newer than the cutoff stays until all of
  it is older.
- `partitions_list` says what there is (`manage.py partitions`).

Nothing here names a table: the partitioned tables and their time column come from the
catalog (`partitioned_tables`). Two workers may run any of it at once: each day's change is
one short transaction under a per-table advisory lock, taken with a try (a busy table is
left to the worker holding it), with a lock timeout so that a long reader delays retention
rather than the other way round. Off PostgreSQL there are no partitions and every function
here has nothing to do.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from django.db import OperationalError, connection, transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

log = logging.getLogger(__name__)

LOCK_TIMEOUT = "5s"  # how long a partition change waits for readers and writers of the table
DEFAULT_BATCH = 20_000  # rows per transaction when deleting old rows out of DEFAULT
_LOCK_SPACE = "kuae.partitions"  # first key of the per-table advisory lock


@dataclass(frozen=True)
class Partition:
    """One partition: a day's (start ≤ t < end) or the DEFAULT one (no bounds)."""

    name: str
    start: dt.datetime | None
    end: dt.datetime | None
    rows: int  # an estimate, from the statistics the server keeps
    bytes: int  # table, indexes and TOAST
    default: bool = False


def on_postgresql() -> bool:
    """Whether the database can hold partitioned tables (PostgreSQL)."""
    return connection.vendor == "postgresql"


def q(name: str) -> str:
    """An identifier, quoted."""
    return connection.ops.quote_name(name)


def partition_name(table: str, day: dt.date) -> str:
    """The name of `table`'s partition for a UTC day: `<table>_pYYYYMMDD`."""
    return f"{table}_p{day:%Y%m%d}"


def default_name(table: str) -> str:
    """The name of `table`'s DEFAULT partition."""
    return f"{table}_default"


def day_bounds(day: dt.date) -> tuple[str, str]:
    """SQL literals of a UTC day's range: its midnight and the next one."""
    following = day + dt.timedelta(days=1)
    return f"'{day.isoformat()} 00:00:00+00'", f"'{following.isoformat()} 00:00:00+00'"


def partitioned_tables() -> list[tuple[str, str]]:
    """(table, time column) of every table partitioned by range on one timestamptz column;
    none off PostgreSQL."""
    if not on_postgresql():
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, a.attname FROM pg_partitioned_table p "
            "JOIN pg_class c ON c.oid = p.partrelid "
            "JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0] "
            "WHERE p.partstrat = 'r' AND p.partnatts = 1 "
            "AND a.atttypid = 'timestamptz'::regtype AND pg_table_is_visible(c.oid) "
            "ORDER BY c.relname"
        )
        return [(table, column) for table, column in cursor.fetchall()]


def partition_key(table: str) -> str | None:
    """The time column `table` is partitioned by, or None when it is a plain table."""
    return dict(partitioned_tables()).get(table)


def partitions_list(table: str) -> list[Partition]:
    """`table`'s partitions, DEFAULT first, then by start."""
    if not on_postgresql():
        return []
    with connection.cursor() as cursor:
        return _partitions(cursor, table)


def _partitions(cursor: CursorWrapper, table: str) -> list[Partition]:
    # A bound is printed in the session's time zone and read back in the same session.
    cursor.execute(
        "SELECT c.relname, "
        "(regexp_match(b.expr, 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz, "
        "(regexp_match(b.expr, 'TO \\(''([^'']+)''\\)'))[1]::timestamptz, "
        "coalesce(s.n_live_tup, 0), pg_total_relation_size(c.oid), b.expr = 'DEFAULT' "
        "FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS expr) b "
        "LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid "
        "WHERE i.inhparent = %s::regclass ORDER BY 6 DESC, 2, 1",
        [table],
    )
    return [Partition(*row) for row in cursor.fetchall()]


def _try_lock(cursor: CursorWrapper, table: str) -> bool:
    """Take `table`'s partition lock for this transaction, if no other session holds it."""
    cursor.execute(
        "SELECT pg_try_advisory_xact_lock(hashtext(%s), hashtext(%s))", [_LOCK_SPACE, table]
    )
    (got,) = cursor.fetchone()
    cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    return bool(got)


def _columns(cursor: CursorWrapper, table: str) -> str:
    """`table`'s columns, quoted, in order."""
    cursor.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
        "AND NOT attisdropped ORDER BY attnum",
        [table],
    )
    return ", ".join(q(name) for (name,) in cursor.fetchall())


def _default_of(partitions: list[Partition]) -> str | None:
    return next((p.name for p in partitions if p.default), None)


def _days_in_default(table: str, column: str, *, before: dt.date) -> list[dt.date]:
    """The UTC days before `before` that have rows in `table`'s DEFAULT partition."""
    with connection.cursor() as cursor:
        default = _default_of(_partitions(cursor, table))
        if default is None:
            return []
        cursor.execute(
            f"SELECT DISTINCT ({q(column)} AT TIME ZONE 'UTC')::date FROM {q(default)} "
            f"WHERE {q(column)} < %s ORDER BY 1",
            [dt.datetime.combine(before, dt.time(), tzinfo=dt.UTC)],
        )
        return [day for (day,) in cursor.fetchall()]


def partitions_ensure(
    table: str, column: str, days_ahead: int = 2, *, today: dt.date | None = None
) -> list[str]:
    """Make `table`'s partitions for today (UTC) and the `days_ahead` days after, and one for
    every earlier day with rows in DEFAULT, those rows moved into it; returns the names made.

    Rows in DEFAULT dated after the last of those days stay there until their day comes
    within reach. A day another worker is changing, or whose locks time out, is left for
    the next run."""
    if not on_postgresql():
        return []
    today = today or timezone.now().astimezone(dt.UTC).date()
    horizon = today + dt.timedelta(days=days_ahead)
    wanted = {today + dt.timedelta(days=k) for k in range(days_ahead + 1)}
    wanted.update(_days_in_default(table, column, before=horizon + dt.timedelta(days=1)))
    made: list[str] = []
    for day in sorted(wanted):
        try:
            outcome = _day_attach(table, column, day)
        except OperationalError as error:  # a lock timeout: readers or writers in the way
            log.warning("partition %s not made: %s", partition_name(table, day), error)
            break
        if outcome is None:
            break  # another worker is at it
        if outcome:
            made.append(partition_name(table, day))
    return made


def _overlaps(part: Partition, start: dt.datetime, end: dt.datetime) -> bool:
    """Whether a (non-DEFAULT) partition covers some of [start, end); no bound is unbounded."""
    if part.default:
        return False
    return (part.start is None or part.start < end) and (part.end is None or part.end > start)


def _day_attach(table: str, column: str, day: dt.date) -> bool | None:
    """Make `table`'s partition for `day` unless one covers it, in one transaction: a plain
    table like the parent, the day's rows moved out of DEFAULT into it, then attached.
    True: made; False: already there; None: another session holds the table's lock.

    Attaching a table whose CHECK constraint proves its range spares the server a scan of
    it; DEFAULT is scanned (it must no longer hold rows of that day), which is cheap as
    long as DEFAULT stays small — and moving its rows out is what keeps it so."""
    name = partition_name(table, day)
    lo, hi = day_bounds(day)
    col = q(column)
    with transaction.atomic(), connection.cursor() as cursor:
        if not _try_lock(cursor, table):
            return None
        partitions = _partitions(cursor, table)
        start = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
        end = start + dt.timedelta(days=1)
        if any(_overlaps(p, start, end) for p in partitions):
            return False
        # Writers wait while the day is attached (readers do not): an insert that had
        # already routed its row to DEFAULT by the partitions it saw would fail once the
        # new one is attached. The locks are taken parent first, as inserts take them, and
        # DEFAULT's at the strength ATTACH needs (holding a weaker one, the move's DELETE,
        # while waiting for that could deadlock with an insert).
        cursor.execute(f"LOCK TABLE {q(table)} IN SHARE ROW EXCLUSIVE MODE")
        default = _default_of(partitions)
        if default is not None:
            cursor.execute(f"LOCK TABLE {q(default)} IN ACCESS EXCLUSIVE MODE")
        bounds = q(f"{name}_bounds")
        cursor.execute(
            f"CREATE TABLE {q(name)} (LIKE {q(table)} "
            "INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)"
        )
        cursor.execute(
            f"ALTER TABLE {q(name)} ADD CONSTRAINT {bounds} CHECK ({col} >= {lo} AND {col} < {hi})"
        )
        if default is not None:
            cols = _columns(cursor, table)
            cursor.execute(
                f"WITH moved AS (DELETE FROM {q(default)} WHERE {col} >= {lo} AND {col} < {hi} "
                f"RETURNING {cols}) INSERT INTO {q(name)} ({cols}) SELECT {cols} FROM moved"
            )
        cursor.execute(
            f"ALTER TABLE {q(table)} ATTACH PARTITION {q(name)} FOR VALUES FROM ({lo}) TO ({hi})"
        )
        cursor.execute(f"ALTER TABLE {q(name)} DROP CONSTRAINT {bounds}")
    return True


def partitions_drop_before(table: str, cutoff: dt.datetime, *, batch: int = DEFAULT_BATCH) -> int:
    """Retention for a partitioned table: drop every day partition wholly older than
    `cutoff` and delete DEFAULT's rows older than it; returns how many rows went.

    Another worker pruning the same table, or a lock timeout, leaves the rest for the next
    run."""
    column = partition_key(table)
    if column is None:
        return 0
    removed = 0
    for part in partitions_list(table):
        if part.default or part.end is None or part.end > cutoff:
            continue
        try:
            rows = _day_drop(table, part.name)
        except OperationalError as error:
            log.warning("partition %s not dropped: %s", part.name, error)
            return removed
        if rows is None:
            return removed
        removed += rows
    return removed + _default_prune(table, column, cutoff, batch)


def _day_drop(table: str, name: str) -> int | None:
    """Count one partition's rows, then detach and drop it; returns the count (0 when it
    was gone already), or None when another session holds the table's lock.

    The count runs before the table-wide lock DETACH takes, so that readers and writers
    wait only for the detach itself; a row that arrives in between goes uncounted."""
    with transaction.atomic(), connection.cursor() as cursor:
        if not _try_lock(cursor, table):
            return None
        cursor.execute(
            "SELECT 1 FROM pg_inherits WHERE inhparent = %s::regclass "
            "AND inhrelid = to_regclass(%s)",
            [table, name],
        )
        if cursor.fetchone() is None:
            return 0
        cursor.execute(f"SELECT count(*) FROM {q(name)}")
        (rows,) = cursor.fetchone()
        cursor.execute(f"ALTER TABLE {q(table)} DETACH PARTITION {q(name)}")
        cursor.execute(f"DROP TABLE {q(name)}")
    return rows


def _default_prune(table: str, column: str, cutoff: dt.datetime, batch: int) -> int:
    """Delete DEFAULT's rows older than `cutoff`, `batch` rows per transaction."""
    default = _default_of(partitions_list(table))
    if default is None:
        return 0
    removed = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {q(default)} WHERE ctid = ANY(ARRAY("
                f"SELECT ctid FROM {q(default)} WHERE {q(column)} < %s LIMIT %s))",
                [cutoff, batch],
            )
            deleted = cursor.rowcount
        removed += deleted
        if deleted < batch:
            return removed
