"""Two telemetry batches at once, each the first to report one new host subject: both
readings are kept — the subject is made once, with the first batch's reading, and the later
reading is applied on top of it, its latest with the earlier one as its previous — never one
batch's reading dropped by the other's insert (docs/integrations.md, Host readings).

Two real threads, each with its own connection and transaction, both past reading the
stored subjects before either writes (a barrier before the insert). Real PostgreSQL only:
its row locks and unique index are what the two race on; SQLite runs one writer at a time."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

import apps.telemetry.services.host as host_services
from apps.telemetry.host import HostReadingIn
from apps.telemetry.models import HostReading
from apps.telemetry.services import host_ingest
from tests.support import side_by_side

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="PostgreSQL's concurrent writers race on the new subject's row; SQLite "
        "serialises every writer (CI runs this on PostgreSQL)",
    ),
]
T0 = timezone.now().replace(microsecond=0) - dt.timedelta(minutes=10)


def test_two_batches_making_one_new_subject_keep_both_readings(nodes, monkeypatch):
    both_read, first_inserted = threading.Barrier(2), threading.Event()
    real_insert = host_services.insert_ignore_keys

    def insert_after_both_read(
        table: str, columns: Sequence[str], rows: Any, keys: Sequence[str]
    ) -> set:
        both_read.wait(timeout=20)  # each batch has read the subjects stored: none yet
        if threading.current_thread().name == "later":  # the older reading inserts first
            first_inserted.wait(timeout=20)
            return real_insert(table, columns, rows, keys)
        try:
            return real_insert(table, columns, rows, keys)
        finally:
            first_inserted.set()

    monkeypatch.setattr(host_services, "insert_ignore_keys", insert_after_both_read)
    batches = [
        [HostReadingIn("gpu000", "memory", "mc0", T0, {"ce_total": 1, "ue_total": 0})],
        [HostReadingIn("gpu000", "memory", "mc0", T0 + dt.timedelta(seconds=30), {"ce_total": 4})],
    ]
    results = side_by_side(lambda batch: host_ingest(readings=batch), batches)
    assert [(r.applied, r.stale) for r in results] == [(1, 0), (1, 0)], results
    reading = HostReading.objects.get()
    assert (reading.ts, reading.values) == (T0 + dt.timedelta(seconds=30), {"ce_total": 4})
    assert (reading.prev_ts, reading.prev_values) == (T0, {"ce_total": 1, "ue_total": 0})
