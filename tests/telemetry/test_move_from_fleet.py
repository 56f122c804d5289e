"""TelemetryEvent and NodeRollup moved from the fleet to telemetry (migrations
fleet.0018_telemetry_to_own_app and telemetry.0001_from_fleet): only Django's record of them
moves, so every event and rollup keeps its row and its id, the id counters go on where they
were, the rollups' day partitions on PostgreSQL stay as they are and take new rows, and the
models' content types (with their permissions) keep their ids. Migrated back before the
move, rows written there, forward, and back again: on PostgreSQL (DATABASE_URL), where
production keeps its telemetry, and on the embedded default's SQLite."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.utils import timezone

from apps.common.partitions import default_name, partition_name, partitions_ensure
from apps.telemetry.models import NodeRollup, TelemetryEvent
from tests.migrations_support import migrate, moved_back, tables

pytestmark = pytest.mark.django_db(transaction=True)  # migrations run their own transactions

POSTGRES = connection.vendor == "postgresql"
BEFORE = [("telemetry", None), ("fleet", "0017_node_sched_to_scheduler")]
AFTER = [("fleet", "0018_telemetry_to_own_app"), ("telemetry", "0001_from_fleet")]
TABLES = {"fleet_telemetryevent", "fleet_noderollup"}
EVENT_COLUMNS = ("id", "node_id", "gpu", "at", "kind", "subject", "value", "previous", "code")
EVENT_COLUMNS += ("pci_bus", "message", "source")


def events(model: Any) -> list[tuple]:
    return list(model.objects.order_by("id").values_list(*EVENT_COLUMNS))


def rollups(model: Any) -> list[tuple]:
    return list(
        model.objects.order_by("id").values_list(
            "id", "node_id", "bucket", "temp_c_max", "temp_c_sum", "temp_c_n"
        )
    )


def where_rollups_are() -> dict[str, int]:
    """Partition → how many rollups it holds (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text, count(*) FROM fleet_noderollup GROUP BY 1")
        return dict(cursor.fetchall())


def content_type(app_label: str, model: str) -> int | None:
    found = ContentType.objects.filter(app_label=app_label, model=model).first()
    return found.pk if found else None


@pytest.fixture
def before_the_move() -> Iterator[Any]:
    """The database as it was before the move (its models); afterwards, every app's latest
    migration again, whatever the test did."""
    yield from moved_back(BEFORE)


def test_events_and_rollups_keep_their_rows_ids_and_partitions_across_the_move_and_back(
    before_the_move: Any,
):
    old = before_the_move
    assert tables() >= TABLES
    # Building the test database made the content types of today's models; going back
    # before the move gave them to the fleet, ids kept.
    event_type = content_type("fleet", "telemetryevent")
    rollup_type = content_type("fleet", "noderollup")
    assert event_type and rollup_type and not content_type("telemetry", "telemetryevent")
    permissions = set(
        Permission.objects.filter(content_type_id=event_type).values_list("pk", "codename")
    )
    assert ("view_telemetryevent" in {c for _, c in permissions}) and len(permissions) == 4

    Cluster, Node = old.get_model("fleet", "Cluster"), old.get_model("fleet", "Node")
    OldEvent, OldRollup = (
        old.get_model("fleet", "TelemetryEvent"),
        old.get_model("fleet", "NodeRollup"),
    )
    cluster = Cluster.objects.create(name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4)
    now = timezone.now().replace(microsecond=0)
    node = Node.objects.create(
        cluster=cluster, hostname="gpu000", gpu_count=8, in_service_at=now, state_changed_at=now
    )
    t = now - dt.timedelta(hours=1)
    OldEvent.objects.bulk_create(
        [
            OldEvent(node=node, gpu=3, at=t, kind="xid", value=79, code=79, source="kernel",
                     pci_bus="0000:48:00.0", message="GPU has fallen off the bus."),
            OldEvent(node=node, gpu=1, at=t, kind="nvlink_crc", value=250, previous=60),
            OldEvent(node=node, gpu=None, at=t, kind="port_down", subject="port:mlx5_0/1",
                     value=1, source="exporter"),
            OldEvent(node=node, gpu=2, at=t, kind="ecc_sbe", value=3, previous=1),
        ]
    )  # fmt: skip
    OldEvent.objects.filter(kind="ecc_sbe").delete()  # the last id: a gap the counter keeps
    # Days before the test database was made have no partition, however near midnight (UTC)
    # it was made; today's and the next two days' are made here if that was yesterday.
    earlier = (now - dt.timedelta(days=5)).replace(minute=0, second=0)
    if POSTGRES:
        partitions_ensure("fleet_noderollup", "bucket")
    for bucket, temp in [(earlier, 71.0), (now.replace(minute=0, second=0), 64.0)]:
        OldRollup.objects.create(
            node=node, bucket=bucket, temp_c_max=temp, temp_c_sum=temp * 8, temp_c_n=8
        )
    written_events, written_rollups = events(OldEvent), rollups(OldRollup)
    deleted_id = written_events[-1][0] + 1
    today, day_before = (
        partition_name("fleet_noderollup", day) for day in (now.date(), earlier.date())
    )
    if POSTGRES:  # today's in its partition; the earlier day has none: DEFAULT holds it
        assert where_rollups_are() == {today: 1, default_name("fleet_noderollup"): 1}

    new = migrate(AFTER)
    assert tables() >= TABLES  # the same tables: none renamed, none made
    assert not {t for t in tables() if t.startswith("telemetry_")}
    assert events(new.get_model("telemetry", "TelemetryEvent")) == written_events
    assert rollups(new.get_model("telemetry", "NodeRollup")) == written_rollups
    # The content types moved with the models, ids and permissions kept.
    assert content_type("telemetry", "telemetryevent") == event_type
    assert content_type("telemetry", "noderollup") == rollup_type
    assert not content_type("fleet", "telemetryevent")
    assert ContentType.objects.get_for_model(TelemetryEvent).pk == event_type
    assert permissions == set(
        Permission.objects.filter(content_type_id=event_type).values_list("pk", "codename")
    )
    # Today's models read them, and new rows take ids after the old ones.
    xid = TelemetryEvent.objects.get(pk=written_events[0][0])
    assert xid.kind_label == "XID error" and xid.node.hostname == "gpu000"
    added = TelemetryEvent.objects.create(node_id=node.pk, gpu=0, at=now, kind="xid", value=13)
    assert added.pk > deleted_id
    rollup = NodeRollup.objects.get(bucket=earlier)
    assert rollup.mean("temp_c") == 71.0
    hour = now.replace(minute=0, second=0)
    later = NodeRollup.objects.create(node_id=node.pk, bucket=hour + dt.timedelta(minutes=5))
    assert later.pk > written_rollups[-1][0]
    if POSTGRES:  # the partitions take new rows, and the hourly task still files the day
        assert partitions_ensure("fleet_noderollup", "bucket") == [day_before]
        assert where_rollups_are() == {today: 2, day_before: 1}

    back = migrate(BEFORE)
    assert tables() >= TABLES
    assert events(back.get_model("fleet", "TelemetryEvent")) == [
        *written_events,
        (added.pk, node.pk, 0, now, "xid", "", 13.0, None, None, "", "", "exporter"),
    ]
    assert len(rollups(back.get_model("fleet", "NodeRollup"))) == 3
    assert content_type("fleet", "telemetryevent") == event_type
    assert not content_type("telemetry", "telemetryevent")
