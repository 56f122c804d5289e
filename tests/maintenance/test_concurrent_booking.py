"""Two operators book windows on overlapping nodes at the same time: one is booked, the other
told the nodes are taken — never both (docs/architecture.md, Locks). Real requests on two
connections; each pauses after its overlap check until the other has made its own (or 2 s
have passed), the interleaving that let both through when the check and the insert were
not serialised."""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from typing import Any

import pytest
from django.db import connection, connections
from django.utils import timezone

from apps.maintenance.models import MaintenanceWindow


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


@pytest.mark.django_db(transaction=True)
def test_overlapping_bookings_at_once_book_one(api, fleet):  # noqa: ANN001
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL (SQLite has one writer; CI runs it)")
    checked = threading.Barrier(2, timeout=2)
    now = timezone.now()
    bodies = [
        {
            "cluster": "c1",
            "nodes": nodes,
            "start": iso(now + dt.timedelta(hours=1)),
            "end": iso(now + dt.timedelta(hours=3)),
            "reason": reason,
        }
        for nodes, reason in (("n[04-06]", "PSU swap"), ("n[06-08]", "rewire"))
    ]
    clients = [api("otto"), api("otto")]
    answers: list[Any] = [None, None]

    def overlap_checked(execute, sql, params, many, context):  # noqa: ANN001, ANN202
        result = execute(sql, params, many, context)
        if sql.startswith("SELECT") and '"maintenance_windownode"' in sql:
            # Broken when serialised: the other request waits for the cluster's row.
            with contextlib.suppress(threading.BrokenBarrierError):
                checked.wait()
        return result

    def book(i: int) -> None:
        try:
            with connection.execute_wrapper(overlap_checked):
                answers[i] = clients[i].post("/api/v1/maintenance/", bodies[i], format="json")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=book, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    codes = sorted(a.status_code for a in answers)
    assert codes == [201, 400], [a.json() for a in answers]
    refused = next(a for a in answers if a.status_code == 400).json()
    assert "n06" in refused["nodes"][0] and "already in a maintenance window" in refused["nodes"][0]
    assert MaintenanceWindow.objects.count() == 1
