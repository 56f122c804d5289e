"""Slurm's view of each node moved from the fleet's node columns to the scheduler's own table
(migrations scheduler.0003 and fleet.0017): every node a sync had seen keeps its Slurm state,
reason and sync time, keyed by the node's own id; a node never synced gets no row. Migrated
back before the move, values written there, forward, changed, and back again: on PostgreSQL
(DATABASE_URL) and on the embedded default's SQLite."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from apps.accounts.models import User
from apps.scheduler.models import SchedulerNode
from tests.migrations_support import migrate, migrate_latest, moved_back

pytestmark = pytest.mark.django_db(transaction=True)  # migrations run their own transactions

BEFORE = [("fleet", "0016_actuation_to_scheduler"), ("scheduler", "0002_actuation_from_fleet")]
AFTER = [("fleet", "0017_node_sched_to_scheduler"), ("scheduler", "0003_node_state_from_fleet")]


def node_columns() -> set[str]:
    with connection.cursor() as cursor:
        return {
            c.name for c in connection.introspection.get_table_description(cursor, "fleet_node")
        }


@pytest.fixture
def before_the_move() -> Iterator[Any]:
    """The database as it was before the move (its models); afterwards, every app's latest
    migration again, whatever the test did."""
    yield from moved_back(BEFORE)


def test_each_nodes_slurm_state_keeps_its_values_across_the_move_and_back(
    before_the_move: Any, client: Any
) -> None:
    old = before_the_move
    assert "sched_state" in node_columns()
    Cluster, Node = old.get_model("fleet", "Cluster"), old.get_model("fleet", "Node")
    t0 = timezone.now().replace(microsecond=0) - dt.timedelta(hours=1)
    cluster = Cluster.objects.create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, slurm_kind="cli"
    )
    seen = [
        ("idle+drain", "kuae #7: xid 79 (root)", t0),
        ("mixed", "", t0 + dt.timedelta(seconds=30)),
        ("", "", None),  # never synced
        ("down", "Not responding", t0 + dt.timedelta(seconds=60)),
    ]
    ids = [
        Node.objects.create(
            cluster=cluster,
            hostname=f"gpu{i:03d}",
            gpu_count=8,
            in_service_at=t0,
            state_changed_at=t0,
            sched_state=state,
            sched_reason=reason,
            sched_synced_at=at,
        ).pk
        for i, (state, reason, at) in enumerate(seen)
    ]
    Node.objects.filter(pk=ids[0]).delete()  # a gap in the node ids
    written = {
        pk: (state, reason, at)
        for pk, (state, reason, at) in zip(ids, seen, strict=True)
        if pk != ids[0] and at is not None
    }

    new = migrate(AFTER)
    assert not {"sched_state", "sched_reason", "sched_synced_at"} & node_columns()
    moved = new.get_model("scheduler", "SchedulerNode").objects.values_list(
        "node_id", "state", "reason", "synced_at"
    )
    assert {pk: (s, r, at) for pk, s, r, at in moved} == written
    # Today's model and the node page read them (every app at its latest: the page reads
    # tables of apps whose migrations come after this move, such as telemetry's ports).
    migrate_latest()
    assert SchedulerNode.objects.get(pk=ids[3]).node.hostname == "gpu003"
    SchedulerNode.objects.filter(pk=ids[1]).update(state="allocated")
    client.force_login(User.objects.create_user(username="mia", role="manager"))
    page = client.get("/nodes/gpu003/").content.decode()
    assert "In Slurm" in page and "Not responding" in page
    assert "not synced yet" in client.get("/nodes/gpu002/").content.decode()

    back = migrate(BEFORE)
    assert "sched_state" in node_columns()
    restored = (
        back.get_model("fleet", "Node")
        .objects.order_by("pk")
        .values_list("pk", "sched_state", "sched_reason", "sched_synced_at")
    )
    assert list(restored) == [
        (ids[1], "allocated", "", seen[1][2]),
        (ids[2], "", "", None),
        (ids[3], *seen[3]),
    ]
