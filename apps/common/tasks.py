"""Background upkeep of the database's partitioned tables."""

from __future__ import annotations

from celery import shared_task

from apps.common.partitions import partitioned_tables, partitions_ensure

DAYS_AHEAD = 2  # partitions made ahead of time: a missed run or two changes nothing


@shared_task(name="apps.common.tasks.ensure_partitions", ignore_result=True)
def ensure_partitions() -> dict[str, int]:
    """Make today's and the next days' partitions of every day-partitioned table and move
    rows sitting in DEFAULT into their day's; returns how many partitions each table got
    (nothing to do off PostgreSQL)."""
    return {
        table: len(partitions_ensure(table, column, DAYS_AHEAD))
        for table, column in partitioned_tables()
    }
