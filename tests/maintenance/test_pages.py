"""The maintenance pages: the calendar and booking form, a window's page, and the windows on
the node page and the overview."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Node
from apps.maintenance.models import MaintenanceWindow
from tests.maintenance.conftest import book

pytestmark = pytest.mark.django_db


def local(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M")


def test_an_operator_books_from_the_form_and_sees_it_on_the_calendar(client, users, fleet):
    client.force_login(users["otto"])
    page = client.get("/maintenance/").content.decode()
    assert "Book a window" in page and 'type="datetime-local"' in page
    assert 'href="/maintenance/" aria-current="page"' in page  # in the header nav
    now = timezone.now()
    r = client.post(
        "/maintenance/",
        {
            "cluster": "c1",
            "nodes": "n[02-03]",
            "racks": "",
            "start": local(now),
            "end": local(now + dt.timedelta(hours=2)),
            "reason": "PSU swap",
        },
    )
    window = MaintenanceWindow.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/maintenance/{window.pk}/"
    assert Node.objects.get(hostname="n02").state == "maintenance"
    page = client.get(r["Location"]).content.decode()
    assert "PSU swap" in page and "n02" in page and "n03" in page and "End now" in page
    page = client.get("/maintenance/").content.decode()
    assert f"#{window.pk}" in page and "In progress" in page and "mw-bar" in page


def test_form_errors_name_the_field(client, users, fleet):
    client.force_login(users["otto"])
    now = timezone.now()
    data = {"cluster": "c1", "nodes": "zz[1-2]", "start": local(now), "reason": "x"}
    r = client.post("/maintenance/", {**data, "end": local(now + dt.timedelta(hours=1))})
    assert r.status_code == 400 and "not nodes of cluster c1" in r.content.decode()
    r = client.post("/maintenance/", {**data, "nodes": "", "end": local(now)})
    assert r.status_code == 400
    assert "name the nodes" in r.content.decode()
    assert not MaintenanceWindow.objects.exists()


def test_a_manager_reads_but_does_not_book(client, users, fleet):
    book(fleet["nodes"][0].cluster, "n04", start=timezone.now() + dt.timedelta(hours=3))
    client.force_login(users["mia"])
    page = client.get("/maintenance/").content.decode()
    assert "Upcoming" in page and "firmware upgrade" in page and "Book a window" not in page
    refused = client.post("/maintenance/", {"cluster": "c1"})
    assert refused.status_code == 403 and b"Not allowed" in refused.content
    w = MaintenanceWindow.objects.get()
    assert client.post(f"/maintenance/{w.pk}/end/").status_code == 403


def test_node_page_and_overview_show_windows(client, users, cluster, fleet):
    now_w = book(cluster, "n05", reason="replace NIC")
    later = book(cluster, "n06", start=timezone.now() + dt.timedelta(days=1), reason="BIOS")
    client.force_login(users["mia"])
    page = client.get("/nodes/n05/").content.decode()
    assert "In maintenance" in page and f"window #{now_w.pk}" in page and "replace NIC" in page
    page = client.get("/nodes/n06/").content.decode()
    assert "Maintenance booked" in page and f"window #{later.pk}" in page
    assert "maintenance-window" not in client.get("/nodes/n07/").content.decode()
    page = client.get("/?cluster=c1").content.decode()
    assert "Maintenance in progress" in page and "replace NIC" in page and "BIOS" not in page


def test_ending_from_the_page_gives_the_nodes_back(client, users, cluster, fleet):
    window = book(cluster, "n08")
    client.force_login(users["otto"])
    r = client.post(f"/maintenance/{window.pk}/end/")
    assert r.status_code == 302
    assert Node.objects.get(hostname="n08").state == "healthy"
    assert "ended" in client.get(r["Location"]).content.decode()
