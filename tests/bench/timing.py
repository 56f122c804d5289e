"""The timing helpers of the benchmarks: median of repeated calls, and the raw-write baseline."""

from __future__ import annotations

import datetime as dt
import statistics
import time
from collections.abc import Callable


def median_ms(fn: Callable[[], object], repeat: int = 15) -> float:
    """Median wall time of `fn` in milliseconds over `repeat` runs, after one warm-up."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def raw_write_seconds(columns: str, rows: list[tuple]) -> float:
    """Seconds to bulk-write `rows` into a scratch table with these columns — COPY on
    PostgreSQL, executemany on SQLite — the floor any intake path is measured against.
    `columns` is "name type, …"; the types are left out on SQLite. On PostgreSQL the rows
    are put in COPY's text form before the clock starts, as a loader holding its data ready
    would send them: the figure is the database's write alone, not Python formatting each
    value (which took two thirds of it when rows were written one by one)."""
    from django.db import connection, transaction

    plain = ", ".join(c.split()[0] for c in columns.split(","))
    marks = ", ".join(["%s"] * len(plain.split(",")))
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_raw")
        cursor.execute(f"CREATE TABLE bench_raw ({columns if postgres else plain})")
    text = "".join("\t".join(_copy_text(v) for v in row) + "\n" for row in rows).encode()
    start = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        if postgres:
            with cursor.copy("COPY bench_raw FROM STDIN") as copy:
                copy.write(text)
        else:
            cursor.executemany(f"INSERT INTO bench_raw VALUES ({marks})", rows)
    elapsed = time.perf_counter() - start
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE bench_raw")
    return elapsed


def _copy_text(value: object) -> str:
    """One value in COPY's text form (the bench's values: no tabs, newlines or backslashes)."""
    if value is None:
        return "\\N"
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return str(value)
