"""The repairs page, the node page's repair banner, the repeat-offender flag on the node and
reliability pages (docs/repairs.md)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Node
from apps.fleet.services import node_set_state
from apps.repairs.models import Repair
from apps.repairs.selectors import repeat_offenders
from apps.repairs.services import repairs_sync
from tests.repairs.conftest import drain

pytestmark = pytest.mark.django_db


def test_the_board_lists_open_repairs_with_forms_by_role(client, users, fleet):
    drain("n01", "XID 48: double-bit ECC")
    repairs_sync()  # the beat's tick
    client.force_login(users["mia"])
    page = client.get("/repairs/").content.decode()
    assert "n01" in page and "XID 48: double-bit ECC" in page
    assert "Add step" not in page and "Return to service" not in page
    client.force_login(users["otto"])
    page = client.get("/repairs/").content.decode()
    assert "Return to service" in page and "Add step" not in page and "skip burn-in" not in page
    client.force_login(users["erin"])
    page = client.get("/repairs/").content.decode()
    assert "Add step" in page and "skip burn-in" in page


def test_steps_and_return_from_the_page(client, users, fleet):
    drain("n01")
    repairs_sync()
    client.force_login(users["erin"])
    pk = Repair.objects.get().pk
    response = client.post(
        f"/repairs/{pk}/step/", {"action": "reseat", "note": "GPU 3", "ticket": "T-1"}
    )
    assert response.status_code == 302
    assert Repair.objects.get().steps[0] | {"at": None} == {
        "action": "reseat",
        "note": "GPU 3",
        "ticket": "T-1",
        "by": "erin",
        "at": None,
    }
    assert client.post(f"/repairs/{pk}/step/", {"action": "pray"}).status_code == 302
    assert len(Repair.objects.get().steps) == 1
    client.force_login(users["otto"])
    assert client.post(f"/repairs/{pk}/step/", {"action": "reboot"}).status_code == 403
    assert client.post(f"/repairs/{pk}/return/", {"skip_burn_in": "1"}).status_code == 302
    assert Repair.objects.get().status == "open"  # operators may not skip it
    client.post(f"/repairs/{pk}/return/", {})
    assert Repair.objects.get().status == "burn_in"
    assert Node.objects.get(hostname="n01").state == "drained"
    page = client.get(f"/repairs/{pk}/").content.decode()
    assert "waiting for a GEMM probe" in page


def test_node_page_shows_the_open_repair(client, users, fleet):
    drain("n02", "fell off the bus")
    repairs_sync()
    client.force_login(users["mia"])
    page = client.get("/nodes/n02/").content.decode()
    pk = Repair.objects.get().pk
    assert f'data-node-repair="{pk}"' in page and "Under repair" in page
    assert "Repeat offender" not in page


def test_three_repairs_in_30_days_flag_a_repeat_offender(client, users, fleet, cluster):
    node = Node.objects.get(hostname="n03")
    now = timezone.now()
    for days in (40, 20, 10):  # the one 40 days ago does not count
        Repair.objects.create(
            node=node, opened_at=now - dt.timedelta(days=days), status="closed", closed_at=now
        )
    assert repeat_offenders() == []
    client.force_login(users["mia"])
    assert "Repeat offender" not in client.get("/nodes/n03/").content.decode()
    drain("n03")
    repairs_sync()
    assert [(o.hostname, o.repairs) for o in repeat_offenders(cluster_id=cluster.pk)] == [
        ("n03", 3)
    ]
    page = client.get("/nodes/n03/").content.decode()
    assert "Repeat offender" in page and "RMA" in page
    page = client.get("/reliability/").content.decode()
    assert "Repeat offenders" in page and "n03" in page and "RMA: 3 repairs in 30 days" in page
    assert "Repeat offender: 3 repairs" in client.get("/repairs/").content.decode()


def test_a_node_put_back_outside_its_repair_shows_it_closing_until_the_sync(client, users, fleet):
    drain("n01", "XID 79 on GPU 3")
    repairs_sync()
    pk = Repair.objects.get().pk
    node = Node.objects.get(hostname="n01")
    node_set_state(node=node, state="healthy", reason="reseated", by="otto")
    client.force_login(users["mia"])
    page = client.get("/nodes/n01/").content.decode()
    assert f'data-node-repair="{pk}"' in page and "Back in service" in page
    assert "Under repair" not in page and "closes within 5 s" in page
    assert Repair.objects.get().status == "open"  # the read closed nothing
    repairs_sync()
    assert "data-node-repair" not in client.get("/nodes/n01/").content.decode()
