"""A check run's own writes meet a write conflict (another transaction holds its cluster's
row past the lock timeout): the transaction is retried inside the worker, and the run ends
`done`, not `error` (docs/architecture.md, Locks). A real lock on PostgreSQL."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections, transaction

from apps.common.dbconflicts import is_conflict
from apps.fleet.models import Cluster
from apps.health.models import CheckRun
from apps.health.services import run_execute


@pytest.mark.django_db(transaction=True)
def test_a_lock_conflict_while_applying_findings_is_retried(cluster, fleet):  # noqa: ANN001
    if connection.vendor != "postgresql":
        pytest.skip("a lock timeout needs PostgreSQL's row locks (CI runs it there)")
    held, failed, released = threading.Event(), threading.Event(), threading.Event()
    conflicts: list[BaseException] = []

    def holder() -> None:
        """Another writer holds the cluster's row until the run's first try gave up."""
        try:
            with transaction.atomic():
                Cluster.objects.select_for_update(no_key=True).get(pk=cluster.pk)
                held.set()
                failed.wait(timeout=20)
        finally:
            released.set()
            connections.close_all()

    def note_conflicts(execute, sql, params, many, context):  # noqa: ANN001, ANN202
        try:
            return execute(sql, params, many, context)
        except Exception as exc:
            if is_conflict(exc) and not failed.is_set():
                conflicts.append(exc)
                failed.set()
                released.wait(timeout=20)  # the other writer is gone before the retry
            raise

    run = CheckRun.objects.create(cluster=cluster, kind="heartbeat", requested_by="test")
    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(timeout=20)
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '300ms'")
    try:
        with connection.execute_wrapper(note_conflicts):
            done = run_execute(run_id=run.pk)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
        failed.set()
        thread.join(timeout=30)
    assert conflicts, "the first try did not meet the other writer's lock"
    assert done is not None and done.status == "done", done and done.error
    assert CheckRun.objects.get(pk=run.pk).status == "done"
