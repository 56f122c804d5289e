"""A write conflict is retried in the server and, if it persists, answered honestly — never
as "database unavailable" (issue 32). Real errors: a second SQLite connection holding the
write lock; on PostgreSQL, a real deadlock between two connections."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from django.db import OperationalError, connection

from apps.common.dbconflicts import atomic_with_retry, is_conflict
from apps.common.errors import exception_handler


def _locked_error(path: Path) -> sqlite3.OperationalError:
    """SQLite's own 'database is locked': another connection holds the write lock."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("create table if not exists t (x int)")
    holder.execute("begin immediate")
    try:
        other = sqlite3.connect(path, timeout=0)
        with pytest.raises(sqlite3.OperationalError) as caught:
            other.execute("insert into t values (1)")
        other.close()
    finally:
        holder.execute("rollback")
        holder.close()
    return caught.value


def _as_django(error: sqlite3.OperationalError) -> OperationalError:
    wrapped = OperationalError(*error.args)
    wrapped.__cause__ = error
    return wrapped


def test_a_lock_is_a_conflict_and_a_closed_database_is_an_outage(tmp_path):
    locked = _as_django(_locked_error(tmp_path / "db.sqlite"))
    assert is_conflict(locked)
    answer = exception_handler(locked, {})
    assert answer.status_code == 503 and "conflicted" in answer.data["detail"]
    assert "unavailable" not in answer.data["detail"]
    with pytest.raises(sqlite3.OperationalError) as down:
        sqlite3.connect(tmp_path / "no-such-dir" / "db.sqlite")
    outage = _as_django(down.value)
    assert not is_conflict(outage)
    assert exception_handler(outage, {}).data["detail"] == "database unavailable, retry"


@pytest.mark.django_db(transaction=True)
def test_a_conflict_is_retried_inside_the_server(tmp_path):
    """The first try meets a real lock; the retry, after the other writer let go, stores."""
    path = tmp_path / "db.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("create table t (x int)")
    holder.execute("begin immediate")
    tries: list[int] = []

    @atomic_with_retry
    def write() -> str:
        tries.append(1)
        try:
            sqlite3.connect(path, timeout=0).execute("insert into t values (1)")
        except sqlite3.OperationalError as exc:
            holder.execute("rollback")  # the other writer finishes meanwhile
            raise _as_django(exc) from exc
        return "stored"

    assert write() == "stored" and len(tries) == 2
    holder.close()


@pytest.mark.django_db(transaction=True)
def test_an_outage_is_not_retried():
    tries: list[int] = []

    @atomic_with_retry
    def write() -> None:
        tries.append(1)
        raise OperationalError("connection refused")

    with pytest.raises(OperationalError):
        write()
    assert len(tries) == 1


@pytest.mark.django_db(transaction=True)
def test_a_real_postgres_deadlock_is_a_conflict():
    if connection.vendor != "postgresql":
        pytest.skip("a real deadlock needs PostgreSQL's row locks (CI runs it there)")
    import threading

    from django.db import connections, transaction

    from apps.fleet.services import cluster_create

    a = cluster_create(name="da", gpu_model="H100", peak_tflops_per_gpu=1, gpus_per_node=8)
    b = cluster_create(name="db", gpu_model="H100", peak_tflops_per_gpu=1, gpus_per_node=8)
    from apps.fleet.models import Cluster

    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def cross(first: int, second: int) -> None:
        try:
            with transaction.atomic():
                Cluster.objects.select_for_update().get(pk=first)
                barrier.wait(timeout=10)
                Cluster.objects.select_for_update().get(pk=second)
        except OperationalError as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=cross, args=(a.pk, b.pk)),
        threading.Thread(target=cross, args=(b.pk, a.pk)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors and all(is_conflict(e) for e in errors)
    assert "conflicted" in exception_handler(errors[0], {}).data["detail"]
