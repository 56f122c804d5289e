"""Two telemetry batches at once, each the first to report one new NIC port (issue 41): both
readings are kept — the port is made once, and the later reading is its latest with the
earlier one as its previous — never one batch's reading dropped by the other's insert.

Two real threads, each with its own connection and transaction, both past reading the
stored ports before either writes (a barrier before the insert). Real PostgreSQL only: its
row locks and unique index are what the two race on; SQLite runs one writer at a time (a
transaction begins IMMEDIATE), so there the second batch simply reads the first's port."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

import apps.telemetry.services.ports as port_services
from apps.telemetry.models import Port
from apps.telemetry.ports import PortReading
from apps.telemetry.services import ports_ingest
from tests.support import side_by_side

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="PostgreSQL's concurrent writers race on the new port's row; SQLite serialises "
        "every writer (CI runs this on PostgreSQL)",
    ),
]
T0 = timezone.now().replace(microsecond=0) - dt.timedelta(minutes=10)


def test_two_batches_making_one_new_port_keep_both_readings(nodes, monkeypatch):
    both_read, first_inserted = threading.Barrier(2), threading.Event()
    real_insert = port_services.insert_ignore

    def insert_after_both_read(table: str, columns: Sequence[str], rows: Any) -> int:
        if table != Port._meta.db_table:
            return real_insert(table, columns, rows)
        both_read.wait(timeout=20)  # each batch has read the ports stored: none yet
        if threading.current_thread().name == "later":  # the older reading inserts first
            first_inserted.wait(timeout=20)
            return real_insert(table, columns, rows)
        try:
            return real_insert(table, columns, rows)
        finally:
            first_inserted.set()

    monkeypatch.setattr(port_services, "insert_ignore", insert_after_both_read)
    batches = [
        [PortReading("gpu000", "mlx5_0", 1, T0, state="ACTIVE", counters={"symbol_error": 1})],
        [
            PortReading(
                "gpu000",
                "mlx5_0",
                1,
                T0 + dt.timedelta(seconds=30),
                state="DOWN",
                counters={"symbol_error": 4},
            )
        ],
    ]
    results = side_by_side(lambda batch: ports_ingest(readings=batch), batches)
    assert [(r.applied, r.stale) for r in results] == [(1, 0), (1, 0)], results
    port = Port.objects.get()
    assert (port.ts, port.state, port.counters) == (
        T0 + dt.timedelta(seconds=30),
        "DOWN",
        {"symbol_error": 4},
    )
    assert (port.prev_ts, port.prev_counters) == (T0, {"symbol_error": 1})
