"""Bulk writes that skip the ORM's per-object cost: COPY on PostgreSQL, executemany on SQLite.

Rows that collide with a unique constraint are skipped, which is what makes re-posting
the same batch store each sample once.
"""

from __future__ import annotations

import datetime as dt
import json
import zlib
from collections.abc import Iterable, Sequence
from typing import TypeVar

from django.db import connection, models, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import QuerySet

_M = TypeVar("_M", bound=models.Model)


def _sqlite_row(row: Sequence[object]) -> tuple[object, ...]:
    """Datetimes in Django's SQLite storage form (naive UTC text), as the ORM writes them."""
    adapt = connection.ops.adapt_datetimefield_value
    return tuple(adapt(v) if isinstance(v, dt.datetime) else v for v in row)


_CHUNK = 5_000


def insert_ignore(table: str, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> int:
    """Insert `rows` into `table`, skipping rows that violate a unique constraint.

    Must run inside a transaction (the caller's batch is all-or-nothing). Returns the number
    of rows actually inserted.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("insert_ignore must run inside transaction.atomic()")
    cols = ", ".join(columns)
    if connection.vendor == "postgresql":
        return _copy_insert(table, cols, rows)
    marks = ", ".join(["%s"] * len(columns))
    sql = f"INSERT OR IGNORE INTO {table} ({cols}) VALUES ({marks})"
    inserted = 0
    with connection.cursor() as cursor:
        chunk: list[Sequence[object]] = []
        for row in rows:
            chunk.append(_sqlite_row(row))
            if len(chunk) >= _CHUNK:
                cursor.executemany(sql, chunk)
                inserted += max(cursor.rowcount, 0)
                chunk = []
        if chunk:
            cursor.executemany(sql, chunk)
            inserted += max(cursor.rowcount, 0)
    return inserted


def insert_ignore_keys(
    table: str, columns: Sequence[str], rows: Sequence[Sequence[object]], keys: Sequence[str]
) -> set[tuple[object, ...]]:
    """`insert_ignore`, answering the values of the `keys` columns of the rows it inserted
    (a row it skipped collided with one already there: a concurrent writer's)."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("insert_ignore_keys must run inside transaction.atomic()")
    if not rows:
        return set()
    cols, back = ", ".join(columns), ", ".join(keys)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            stage = _copy_to_stage(cursor, "ins", table, columns, rows)
            cursor.execute(
                f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {stage} "
                f"ON CONFLICT DO NOTHING RETURNING {back}"
            )
            made = {tuple(row) for row in cursor.fetchall()}
            cursor.execute(f"TRUNCATE {stage}")
            return made
    # SQLite runs one writer at a time: every row is most often inserted, in one executemany
    # (in a savepoint); when some collided, row by row, as RETURNING is not for executemany.
    at = [list(columns).index(k) for k in keys]
    try:
        with transaction.atomic():
            if insert_ignore(table, columns, rows) != len(rows):
                raise _Collided
        return {tuple(row[i] for i in at) for row in rows}
    except _Collided:
        pass
    marks = ", ".join(["%s"] * len(columns))
    sql = f"INSERT OR IGNORE INTO {table} ({cols}) VALUES ({marks}) RETURNING {back}"
    made = set()
    with connection.cursor() as cursor:
        for row in rows:
            cursor.execute(sql, _sqlite_row(row))  # type: ignore[arg-type]  # (as executemany's)
            made.update(tuple(r) for r in cursor.fetchall())
    return made


class _Collided(Exception):
    """Some rows of an insert collided: undo it (its savepoint) and insert row by row."""


def _copy_to_stage(
    cursor: CursorWrapper,
    kind: str,
    table: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
) -> str:
    """COPY rows into a per-connection temp table typed like `table`'s columns (one per
    column set, emptied first); returns its name."""
    cols = ", ".join(columns)
    stage = f"_{kind}_{table}_{zlib.crc32(cols.encode()):08x}"
    cursor.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS {stage} AS SELECT {cols} FROM {table} WITH NO DATA"
    )
    cursor.execute(f"TRUNCATE {stage}")
    with cursor.copy(f"COPY {stage} ({cols}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    return stage


def _copy_insert(table: str, cols: str, rows: Iterable[Sequence[object]]) -> int:
    with connection.cursor() as cursor:
        stage = _copy_to_stage(cursor, "ins", table, cols.split(", "), rows)
        cursor.execute(
            f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {stage} ON CONFLICT DO NOTHING"
        )
        inserted = cursor.rowcount
        cursor.execute(f"TRUNCATE {stage}")
    return inserted


def update_many(
    table: str,
    keys: Sequence[str],
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
) -> None:
    """Set `columns` on the rows matched by `keys`; each row is key values then column values.

    PostgreSQL: COPY into a staging table typed like the target, one `UPDATE … FROM` it;
    SQLite: executemany.
    """
    if not rows:
        return
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # COPY into a staging table, then one UPDATE … FROM it: no giant parameter list.
            names = [*keys, *columns]
            stage = _copy_to_stage(cursor, "upd", table, names, rows)
            sets = ", ".join(f"{c} = v.{c}" for c in columns)
            match = " AND ".join(f"t.{k} = v.{k}" for k in keys)
            cursor.execute(f"UPDATE {table} AS t SET {sets} FROM {stage} AS v WHERE {match}")
            cursor.execute(f"TRUNCATE {stage}")
        else:
            sets = ", ".join(f'"{c}" = %s' for c in columns)
            match = " AND ".join(f'"{k}" = %s' for k in keys)
            nk = len(keys)
            cursor.executemany(
                f"UPDATE {table} SET {sets} WHERE {match}",
                [_sqlite_row((*row[nk:], *row[:nk])) for row in rows],
            )


_MERGE = {
    # How an existing value `t.c` and an incoming one `excluded.c` combine; NULL-safe.
    "postgresql": {
        "min": "LEAST({t}, excluded.{c})",
        "max": "GREATEST({t}, excluded.{c})",
        "sum": "COALESCE({t}, 0) + COALESCE(excluded.{c}, 0)",
        "replace": "excluded.{c}",
    },
    "sqlite": {
        "min": "COALESCE(min({t}, excluded.{c}), {t}, excluded.{c})",
        "max": "COALESCE(max({t}, excluded.{c}), {t}, excluded.{c})",
        "sum": "COALESCE({t}, 0) + COALESCE(excluded.{c}, 0)",
        "replace": "excluded.{c}",
    },
}


def upsert_merge(
    table: str,
    conflict: Sequence[str],
    merge: dict[str, str],
    rows: Sequence[Sequence[object]],
) -> None:
    """Insert rows of (*conflict, *merge columns); on conflict combine each column with the
    stored value by its rule: `min`, `max`, `sum` or `replace`. Safe under concurrency: the
    database does the merge."""
    if not rows:
        return
    columns = [*conflict, *merge]
    rules = _MERGE[connection.vendor]
    sets = ", ".join(
        f"{c} = " + rules[rule].format(t=f"{table}.{c}", c=c) for c, rule in merge.items()
    )
    cols = ", ".join(columns)
    on_conflict = f"ON CONFLICT ({', '.join(conflict)}) DO UPDATE SET {sets}"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # COPY into staging, then one INSERT … SELECT … ON CONFLICT (rows must have
            # distinct conflict keys, as one statement may not touch a row twice).
            stage = _copy_to_stage(cursor, "ups", table, columns, rows)
            cursor.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {stage} {on_conflict}")
        else:
            marks = ", ".join(["%s"] * len(columns))
            cursor.executemany(
                f"INSERT INTO {table} ({cols}) VALUES ({marks}) {on_conflict}",
                [_sqlite_row(row) for row in rows],
            )


def among(queryset: QuerySet[_M], column: str, values: Sequence[object]) -> QuerySet[_M]:
    """`queryset` narrowed to rows whose `column` (of its own table) is one of `values`, sent
    as one parameter — an array on PostgreSQL, JSON text on SQLite — where Django's `__in`
    spends time per value building, quoting and splitting a query of thousands of them."""
    meta = queryset.model._meta
    field = meta.get_field(column)  # a model field: never text from a request
    name = f'"{meta.db_table}"."{getattr(field, "column", column)}"'
    if connection.vendor == "postgresql":
        return queryset.extra(where=[f"{name} = ANY(%s)"], params=[list(values)])
    where = f"{name} IN (SELECT value FROM json_each(%s))"
    return queryset.extra(where=[where], params=[json.dumps(list(values))])


def delete_among(table: str, column: str, values: Sequence[object]) -> None:
    """DELETE the rows of `table` whose `column` is one of `values` (one parameter, as in
    `among`); `table` and `column` are names from model metadata."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f'DELETE FROM {table} WHERE "{column}" = ANY(%s)', [list(values)])
        else:
            cursor.execute(
                f'DELETE FROM {table} WHERE "{column}" IN (SELECT value FROM json_each(%s))',
                [json.dumps(list(values))],
            )
