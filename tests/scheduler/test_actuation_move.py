"""Actuation moved from the fleet to the scheduler (migrations fleet.0016 and scheduler.0002):
the table is renamed, not rebuilt, so every drain and resume keeps its row, its id, its node
and its state change, and the id counter goes on where it was. Migrated back before the move,
rows written there, forward, and back again: on PostgreSQL (DATABASE_URL), where production
keeps its outbox, and on the embedded default's SQLite, which `make run` sites keep theirs in."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from apps.scheduler.models import Actuation
from apps.scheduler.selectors import actuation_list
from tests.migrations_support import migrate, moved_back, tables

pytestmark = pytest.mark.django_db(transaction=True)  # migrations run their own transactions

BEFORE = [("fleet", "0015_plugin_kinds"), ("scheduler", "0001_initial")]
AFTER = [("fleet", "0016_actuation_to_scheduler"), ("scheduler", "0002_actuation_from_fleet")]
COLUMNS = (
    "id",
    "node_id",
    "state_change_id",
    "action",
    "reason",
    "requested_at",
    "sent_at",
    "result",
    "error",
    "attempts",
    "next_try_at",
)


def rows(model: Any) -> list[tuple[Any, ...]]:
    """Every actuation, every column, by id."""
    return list(model.objects.order_by("id").values_list(*COLUMNS))


@pytest.fixture
def before_the_move() -> Iterator[Any]:
    """The database as it was before the move (its models); afterwards, every app's latest
    migration again, whatever the test did."""
    yield from moved_back(BEFORE)


def test_the_outbox_keeps_its_rows_and_ids_across_the_move_and_back(before_the_move: Any):
    old = before_the_move
    assert "fleet_actuation" in tables() and "scheduler_actuation" not in tables()
    Cluster, Node = old.get_model("fleet", "Cluster"), old.get_model("fleet", "Node")
    Change, OldActuation = (
        old.get_model("fleet", "NodeStateChange"),
        old.get_model("fleet", "Actuation"),
    )
    t0 = timezone.now().replace(microsecond=0) - dt.timedelta(hours=1)
    cluster = Cluster.objects.create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, actuation="on"
    )
    nodes = [
        Node.objects.create(
            cluster=cluster,
            hostname=f"gpu{i:03d}",
            gpu_count=8,
            in_service_at=t0,
            state_changed_at=t0,
        )
        for i in range(2)
    ]
    for i, (node, action, result, sent) in enumerate(
        [
            (nodes[0], "drain", "done", True),
            (nodes[0], "resume", "skipped", False),
            (nodes[1], "drain", "pending", False),
            (nodes[1], "resume", "failed", True),
        ]
    ):
        at = t0 + dt.timedelta(minutes=i)
        change = Change.objects.create(
            node=node, state="drained" if action == "drain" else "healthy", reason=f"r{i}", at=at
        )
        OldActuation.objects.create(
            node=node,
            state_change=change,
            action=action,
            reason=f"kuae #{change.pk}: r{i}",
            requested_at=at,
            sent_at=at + dt.timedelta(seconds=3) if sent else None,
            result=result,
            error="" if result != "failed" else "slurmrestd: HTTP 400 unknown node",
            attempts=i,
            next_try_at=at,
        )
    OldActuation.objects.filter(result="skipped").delete()  # a gap the ids keep
    written = rows(OldActuation)
    assert len(written) == 3 and written[1][0] == written[0][0] + 2

    ContentType = old.get_model("contenttypes", "ContentType")
    (kind,) = ContentType.objects.filter(model="actuation").values_list("pk", "app_label")
    assert kind[1] == "fleet"  # its permissions and admin log entries point at this row

    new = migrate(AFTER)
    assert "scheduler_actuation" in tables() and "fleet_actuation" not in tables()
    assert list(ContentType.objects.filter(model="actuation").values_list("pk", "app_label")) == [
        (kind[0], "scheduler")
    ]
    assert rows(new.get_model("scheduler", "Actuation")) == written
    # Today's model and the API's read them, and a new request's id comes after the old ones.
    assert [a.pk for a in actuation_list()] == [written[2][0], written[1][0], written[0][0]]
    failed = Actuation.objects.select_related("node", "state_change").get(pk=written[2][0])
    assert failed.node.hostname == "gpu001" and failed.state_change.reason == "r3"
    assert failed.result_choice.label == "Failed"
    added = Actuation.objects.create(
        node_id=nodes[1].pk, action="drain", reason="kuae #9: x", requested_at=t0, next_try_at=t0
    )
    assert added.pk > written[-1][0]
    # The partial index for due rows came along under its own name.
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, "scheduler_actuation")
    assert {"actuation_pending", "actuation_node"} <= set(constraints)

    back = migrate(BEFORE)
    assert "fleet_actuation" in tables() and "scheduler_actuation" not in tables()
    restored = rows(back.get_model("fleet", "Actuation"))
    assert restored[:3] == written and restored[3][0] == added.pk
