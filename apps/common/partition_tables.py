"""Turning a plain PostgreSQL table into one partitioned by day on a time column, and back,
in place: what the jobs and fleet migrations run on their time-series tables.

The table keeps its name, columns, defaults and Django's names for its constraints and
indexes, so later migrations of the model (a column added, an index dropped) find what they
expect. Two things change, because PostgreSQL requires them of a partitioned table:

- the primary key takes the time column too, (id, ts) — rows are still found by id alone
  as before; every unique constraint must already contain the time column;
- the id column, an identity column on a plain table, gets its values from a sequence it
  owns (`<table>_id_seq`, set to go on where the old one stopped), since PostgreSQL before
  17 allows no identity column on a partitioned table. Django's sequence reset and
  `pg_get_serial_sequence` work on either.

The rows are copied (day partitions made for every day they cover, and for today and the
next days), so converting a big table holds it locked for as long as the copy takes.
Both directions run in the migration's transaction; off PostgreSQL nothing is done.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from apps.common.partitions import day_bounds, default_name, partition_name

Quote = Callable[[str], str]  # the connection's identifier quoting


@dataclass(frozen=True)
class _Shape:
    """What a table is made of beyond its columns, read from the catalog."""

    primary: tuple[str, list[str]] | None  # name, columns
    constraints: list[tuple[str, str, str, list[str]]]  # name, kind (u x c f), definition, columns
    indexes: list[tuple[str, str, bool, list[str]]]  # name, CREATE INDEX statement, unique, columns
    counters: list[tuple[str, str, int, bool]]  # column, type, sequence's last value, called


def _shape(cursor: CursorWrapper, table: str) -> _Shape:
    cursor.execute(
        "SELECT c.conname, c.contype, pg_get_constraintdef(c.oid), "
        "ARRAY(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, i) "
        "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i) "
        "FROM pg_constraint c WHERE c.conrelid = %s::regclass "
        "AND c.contype IN ('p', 'u', 'x', 'c', 'f') "
        "ORDER BY array_position(ARRAY['p', 'u', 'x', 'c', 'f'], c.contype::text), c.conname",
        [table],
    )
    primary, constraints = None, []
    for name, kind, definition, columns in cursor.fetchall():
        if kind == "p":
            primary = (name, list(columns))
        else:
            constraints.append((name, kind, definition, list(columns)))
    cursor.execute(
        "SELECT c.relname, pg_get_indexdef(i.indexrelid), i.indisunique, "
        "ARRAY(SELECT a.attname FROM unnest(i.indkey) k(n) JOIN pg_attribute a "
        "ON a.attrelid = i.indrelid AND a.attnum = k.n) "
        "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE i.indrelid = %s::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint k "
        "WHERE k.conindid = i.indexrelid "
        "AND k.conrelid = i.indrelid AND k.contype IN ('p', 'u', 'x')) ORDER BY c.relname",
        [table],
    )
    indexes = [(name, sql, unique, list(cols)) for name, sql, unique, cols in cursor.fetchall()]
    cursor.execute(
        "SELECT attname, format_type(atttypid, atttypmod), "
        "pg_get_serial_sequence(%s, attname) FROM pg_attribute "
        "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped "
        "AND pg_get_serial_sequence(%s, attname) IS NOT NULL ORDER BY attnum",
        [table, table, table],
    )
    counters = []
    for column, kind, sequence in cursor.fetchall():
        cursor.execute(f"SELECT last_value, is_called FROM {sequence}")
        last, called = cursor.fetchone()
        counters.append((column, kind, last, called))
    return _Shape(primary, constraints, indexes, counters)


def _set_aside(cursor: CursorWrapper, table: str, shape: _Shape, q: Quote) -> str:
    """Rename `table` out of the way and free the names the new one takes over: its primary
    key, unique constraints and indexes (their names are the schema's), its sequences."""
    old = f"{table}__old"
    # Rows written earlier in this transaction have their deferred foreign keys checked
    # now: a table with checks pending cannot be altered.
    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    cursor.execute(f"ALTER TABLE {q(table)} RENAME TO {q(old)}")
    if shape.primary:
        cursor.execute(f"ALTER TABLE {q(old)} DROP CONSTRAINT {q(shape.primary[0])}")
    for name, kind, *_ in shape.constraints:
        if kind in ("u", "x"):
            cursor.execute(f"ALTER TABLE {q(old)} DROP CONSTRAINT {q(name)}")
    for name, *_ in shape.indexes:
        cursor.execute(f"DROP INDEX {q(name)}")
    for column, *_ in shape.counters:
        cursor.execute(
            "SELECT attidentity <> '' FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attname = %s",
            [old, column],
        )
        (identity,) = cursor.fetchone()
        if identity:
            cursor.execute(f"ALTER TABLE {q(old)} ALTER COLUMN {q(column)} DROP IDENTITY")
        else:
            cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [old, column])
            (sequence,) = cursor.fetchone()
            cursor.execute(f"ALTER TABLE {q(old)} ALTER COLUMN {q(column)} DROP DEFAULT")
            # CASCADE: partitions copied the default that calls it.
            cursor.execute(f"DROP SEQUENCE {sequence} CASCADE")
    return old


def _copy_and_finish(
    cursor: CursorWrapper,
    table: str,
    old: str,
    shape: _Shape,
    primary: list[str],
    q: Quote,
) -> None:
    """Copy the rows across, then add the constraints and indexes (faster after the copy),
    drop the old table and gather statistics."""
    cursor.execute(
        "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute "
        "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
        [table],
    )
    (cols,) = cursor.fetchone()
    cursor.execute(f"INSERT INTO {q(table)} ({cols}) SELECT {cols} FROM {q(old)}")
    if shape.primary:
        keys = ", ".join(q(c) for c in primary)
        cursor.execute(
            f"ALTER TABLE {q(table)} ADD CONSTRAINT {q(shape.primary[0])} PRIMARY KEY ({keys})"
        )
    for name, _, definition, _ in shape.constraints:
        cursor.execute(f"ALTER TABLE {q(table)} ADD CONSTRAINT {q(name)} {definition}")
    for _, statement, *_ in shape.indexes:
        cursor.execute(statement)
    cursor.execute(f"DROP TABLE {q(old)}")
    cursor.execute(f"ANALYZE {q(table)}")


def table_partition(
    connection: BaseDatabaseWrapper, table: str, column: str, days_ahead: int = 2
) -> None:
    """Make `table` partitioned by range on `column` (timestamptz), one partition per UTC
    day its rows cover up to today + `days_ahead`, today's and those days' partitions, and a
    DEFAULT partition (rows dated later than that). Nothing off PostgreSQL."""
    if connection.vendor != "postgresql":
        return
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        shape = _shape(cursor, table)
        unfit = [
            n for n, kind, _, cols in shape.constraints if kind in ("u", "x") and column not in cols
        ]
        unfit += [n for n, _, unique, cols in shape.indexes if unique and column not in cols]
        if unfit:
            raise ValueError(f"{table}: unique constraints or indexes {unfit} lack {column}")
        old = _set_aside(cursor, table, shape, q)
        cursor.execute(
            f"CREATE TABLE {q(table)} (LIKE {q(old)} INCLUDING DEFAULTS INCLUDING STORAGE "
            f"INCLUDING COMMENTS) PARTITION BY RANGE ({q(column)})"
        )
        for name, kind, last, called in shape.counters:
            sequence = q(f"{table}_{name}_seq")
            cursor.execute(f"CREATE SEQUENCE {sequence} AS {kind} OWNED BY {q(table)}.{q(name)}")
            cursor.execute(
                f"ALTER TABLE {q(table)} ALTER COLUMN {q(name)} "
                f"SET DEFAULT nextval('{sequence}'::regclass)"
            )
            cursor.execute("SELECT setval(%s::regclass, %s, %s)", [sequence, last, called])
        today = timezone.now().astimezone(dt.UTC).date()
        horizon = today + dt.timedelta(days=days_ahead)
        cursor.execute(
            f"SELECT DISTINCT ({q(column)} AT TIME ZONE 'UTC')::date FROM {q(old)} "
            f"WHERE {q(column)} < %s",
            [dt.datetime.combine(horizon + dt.timedelta(days=1), dt.time(), tzinfo=dt.UTC)],
        )
        days = {day for (day,) in cursor.fetchall()}
        days.update(today + dt.timedelta(days=k) for k in range(days_ahead + 1))
        cursor.execute(f"CREATE TABLE {q(default_name(table))} PARTITION OF {q(table)} DEFAULT")
        for day in sorted(days):
            lo, hi = day_bounds(day)
            cursor.execute(
                f"CREATE TABLE {q(partition_name(table, day))} PARTITION OF {q(table)} "
                f"FOR VALUES FROM ({lo}) TO ({hi})"
            )
        primary = shape.primary[1] if shape.primary else []
        _copy_and_finish(
            cursor, table, old, shape, primary + ([column] if column not in primary else []), q
        )


def table_unpartition(connection: BaseDatabaseWrapper, table: str) -> None:
    """Make a partitioned `table` a plain one again, its rows, names and id counter kept (the
    primary key back to the id alone, the counter an identity column as Django makes it).
    Nothing off PostgreSQL or when the table is plain already."""
    if connection.vendor != "postgresql":
        return
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.attname FROM pg_partitioned_table p JOIN pg_attribute a "
            "ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0] "
            "WHERE p.partrelid = %s::regclass",
            [table],
        )
        found = cursor.fetchone()
        if found is None:
            return
        (column,) = found
        shape = _shape(cursor, table)
        old = _set_aside(cursor, table, shape, q)
        cursor.execute(
            f"CREATE TABLE {q(table)} (LIKE {q(old)} INCLUDING DEFAULTS INCLUDING STORAGE "
            "INCLUDING COMMENTS)"
        )
        for name, _, last, called in shape.counters:
            cursor.execute(
                f"ALTER TABLE {q(table)} ALTER COLUMN {q(name)} "
                "ADD GENERATED BY DEFAULT AS IDENTITY"
            )
            cursor.execute(
                "SELECT setval(pg_get_serial_sequence(%s, %s), %s, %s)",
                [table, name, last, called],
            )
        primary = shape.primary[1] if shape.primary else []
        if len(primary) > 1 and column in primary:
            primary = [c for c in primary if c != column]
        _copy_and_finish(cursor, table, old, shape, primary, q)
