"""SQL fragments that differ between PostgreSQL and SQLite."""

from __future__ import annotations

from django.db import connection


def epoch_seconds(column: str) -> str:
    """SQL for a timestamp column as float seconds since the Unix epoch.

    For queries run with parameters: a literal percent sign is written `%%`.
    """
    if connection.vendor == "postgresql":
        return f"EXTRACT(EPOCH FROM {column})::float8"
    # Django stores "YYYY-MM-DD HH:MM:SS[.ffffff]" in UTC; julianday() would lose microseconds.
    return f"(CAST(strftime('%%s', {column}) AS REAL) + CAST(substr({column}, 20) AS REAL))"
