"""SQL fragments that differ between PostgreSQL and SQLite."""

from __future__ import annotations

from django.db import connection


def epoch_seconds(column: str) -> str:
    """SQL for a timestamp column as float seconds since the Unix epoch."""
    if connection.vendor == "postgresql":
        return f"EXTRACT(EPOCH FROM {column})::float8"
    return f"((julianday({column}) - 2440587.5) * 86400.0)"
