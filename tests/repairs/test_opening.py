"""A node that becomes drained or down opens one repair, with its reason, incidents and
evidence; a further drain or down is added to it (docs/repairs.md)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Node
from apps.fleet.services import node_set_state
from apps.health.models import CheckResult
from apps.incidents.models import Incident
from apps.repairs.models import Repair
from apps.repairs.services import repairs_sync
from apps.repairs.tasks import repairs_sync_task
from kuaeweb.schedule import beat_schedule
from tests.repairs.conftest import drain

pytestmark = pytest.mark.django_db


def test_a_drain_opens_one_repair_with_reason_incidents_and_evidence(fleet, cluster):
    node = Node.objects.get(hostname="n01")
    now = timezone.now()
    incident = Incident.objects.create(
        title="GPU fell off the bus",
        category="gpu",
        severity="sev2",
        status="open",
        detected_at=now - dt.timedelta(minutes=1),
        cluster=cluster,
    )
    incident.nodes.add(node)
    CheckResult.objects.create(
        cluster=cluster,
        kind="gpu_errors",
        target="gpu:n01/3",
        node=node,
        status="fail",
        message="XID 79 (GPU has fallen off the bus)",
        at=now,
        since=now,
        last_fail_at=now,
    )
    drain("n01")
    assert repairs_sync()["opened"] == 1
    assert repairs_sync() == {"opened": 0, "added": 0, "closed": 0}  # read once
    repair = Repair.objects.get()
    assert repair.node == node and repair.status == "open"
    assert repair.reason == "XID 79: fallen off the bus"
    assert list(repair.incidents.all()) == [incident]
    assert [(e["kind"], e["target"], e["status"]) for e in repair.evidence] == [
        ("gpu_errors", "gpu:n01/3", "fail")
    ]


def test_a_further_drain_or_down_adds_to_the_open_repair(fleet):
    drain("n02")
    repairs_sync()
    drain("n02", "heartbeat: no heartbeat for 400 s", state="down")
    assert repairs_sync() == {"opened": 0, "added": 1, "closed": 0}
    repair = Repair.objects.get()
    assert repair.changes.count() == 2 and repair.reason == "XID 79: fallen off the bus"
    assert Repair.objects.filter(node__hostname="n02").count() == 1


def test_healthy_and_suspect_changes_open_nothing(fleet):
    node = Node.objects.get(hostname="n03")
    node_set_state(node=node, state="suspect", reason="slow")
    node_set_state(node=node, state="maintenance", reason="window")
    repairs_sync()
    assert not Repair.objects.exists()


def test_a_node_put_back_by_a_plain_state_change_closes_its_repair_as_such(fleet):
    drain("n01")
    repairs_sync()
    node_set_state(node=Node.objects.get(hostname="n01"), state="healthy", reason="ok", by="otto")
    assert repairs_sync()["closed"] == 1
    repair = Repair.objects.get()
    assert (repair.status, repair.closed_how, repair.closed_by) == ("closed", "outside", "otto")
    drain("n01", "again")  # a new drain after that: a new repair
    repairs_sync()
    assert Repair.objects.filter(status="open").get().reason == "again"


def test_drain_return_drain_before_a_sync_is_two_repairs(fleet):
    drain("n01", "first")
    node_set_state(node=Node.objects.get(hostname="n01"), state="healthy", reason="ok", by="otto")
    drain("n01", "second")
    assert repairs_sync()["opened"] == 2
    first, second = Repair.objects.order_by("id")
    assert (first.reason, first.status, second.reason, second.status) == (
        "first",
        "closed",
        "second",
        "open",
    )


def test_reads_open_no_repair_they_show_it_being_opened_until_the_beat_does(fleet, client, users):
    drain("n03", "XID 79 on GPU 3")
    mia = fleet["mia"]
    assert mia.get("/api/v1/repairs/?status=open").json()["count"] == 0
    client.force_login(users["mia"])
    node_page = client.get("/nodes/n03/").content.decode()
    board = client.get("/repairs/").content.decode()
    assert not Repair.objects.exists()  # reading wrote nothing
    assert "data-repair-opening" in node_page and "Under repair" in node_page
    assert "XID 79 on GPU 3" in node_page and "being opened (within 5 s)" in node_page
    assert 'data-repair-opening="n03"' in board and "XID 79 on GPU 3" in board
    assert "No open repair" not in board

    # The beat opens it within KUAE_REPAIRS_SYNC_S seconds (docs/repairs.md).
    assert beat_schedule()["repairs-sync"] == {
        "task": "apps.repairs.tasks.repairs_sync",
        "schedule": 5.0,
        "options": {"expires": 5.0},  # a sync not started in time is dropped, not piled up
    }
    assert repairs_sync_task()["opened"] == 1
    pk = Repair.objects.get().pk
    assert [r["node"] for r in mia.get("/api/v1/repairs/?status=open").json()["results"]] == ["n03"]
    node_page = client.get("/nodes/n03/").content.decode()
    assert f'data-node-repair="{pk}"' in node_page and "data-repair-opening" not in node_page
    assert "data-repair-opening" not in client.get("/repairs/").content.decode()


def test_a_node_out_of_service_with_nothing_to_take_is_not_shown_opening(fleet, client, users):
    drain("n02")
    repairs_sync()
    repair = Repair.objects.get()
    repair.status = "closed"  # as if closed by hand while the node stayed out
    repair.save()
    client.force_login(users["mia"])
    page = client.get("/nodes/n02/").content.decode()
    assert "data-node-repair" not in page  # no drain is waiting: nothing is being opened
