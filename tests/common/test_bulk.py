"""Bulk helpers on the configured database: insert-ignore, update-many, merge-upsert."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import transaction

from apps.common.bulk import insert_ignore, insert_ignore_keys, update_many
from apps.fleet.models import Node

pytestmark = pytest.mark.django_db


def test_update_many_with_different_column_sets_on_one_table(nodes):
    t = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
    with transaction.atomic():
        update_many("fleet_node", ("id",), ("last_seen_at",), [(nodes[0].pk, t)])
        update_many(
            "fleet_node", ("id",), ("scrape_ok", "scrape_error"), [(nodes[0].pk, False, "x")]
        )
        update_many("fleet_node", ("id",), ("last_seen_at",), [(nodes[1].pk, t)])
    first = Node.objects.get(pk=nodes[0].pk)
    assert first.last_seen_at == t and first.scrape_ok is False and first.scrape_error == "x"
    assert Node.objects.get(pk=nodes[1].pk).last_seen_at == t


def test_insert_ignore_keys_answers_the_keys_of_the_rows_it_inserted(nodes):
    cols = ("node_id", "kind", "subject", "ts", "latest_values", "prev_values", "source")
    t = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
    rows = [
        (nodes[0].pk, "memory", mc, t, '{"ce_total": 1}', "{}", "agent") for mc in ("mc0", "mc1")
    ]
    keys = ("node_id", "kind", "subject")
    with transaction.atomic():
        made = insert_ignore_keys("telemetry_hostreading", cols, rows[:1], keys)
        assert made == {(nodes[0].pk, "memory", "mc0")}
        assert insert_ignore_keys("telemetry_hostreading", cols, rows, keys) == {
            (nodes[0].pk, "memory", "mc1")
        }
        assert insert_ignore_keys("telemetry_hostreading", cols, [], keys) == set()


def test_insert_ignore_skips_duplicates(nodes):
    rows = [(nodes[0].pk, 0, dt.datetime(2026, 11, 23, tzinfo=dt.UTC), "xid", 79.0, None)]
    cols = ("node_id", "gpu", "at", "kind", "value", "previous")
    with transaction.atomic():
        assert insert_ignore("fleet_telemetryevent", cols, rows) == 1
        assert insert_ignore("fleet_telemetryevent", cols, rows) == 0
