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


@shared_task(name="apps.common.tasks.ping_workers", ignore_result=True)
def ping_workers(timeout_s: float = 2.0) -> int:
    """Broadcast a control ping (`celery inspect ping`) and record `worker:<name>` for every
    worker that answers, and for the one running this task (a solo-pool worker cannot answer
    while it runs it); returns how many were recorded."""
    from celery import current_app, current_task

    from apps.common.heartbeats import heartbeats_record

    names = [name for reply in current_app.control.ping(timeout=timeout_s) for name in reply]
    own = getattr(current_task.request, "hostname", None) if current_task else None
    if own:
        names.append(own)
    return heartbeats_record(f"worker:{name}" for name in names)
