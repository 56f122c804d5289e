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
    """Broadcast a control message asking each worker which queues it consumes (`celery
    inspect active_queues`, an answer as good as a ping) and record `worker:<name>` with
    those queues for every worker that answers, and for the one running this task (a
    solo-pool worker cannot answer while it runs it: its own -Q selection stands in);
    returns how many were recorded."""
    from celery import current_app, current_task

    from apps.common.heartbeats import workers_record

    replies = current_app.control.inspect(timeout=timeout_s).active_queues() or {}
    workers: dict[str, list[str] | None] = {
        name: [q["name"] for q in queues or [] if q.get("name")] for name, queues in replies.items()
    }
    own = getattr(current_task.request, "hostname", None) if current_task else None
    if own and own not in workers:
        workers[own] = list(current_app.amqp.queues.consume_from)
    return workers_record(workers)
