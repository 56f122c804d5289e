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
            "nodes": "n[05-06]",
            "racks": "",
            "start": local(now),
            "end": local(now + dt.timedelta(hours=2)),
            "reason": "PSU swap",
        },
    )
    window = MaintenanceWindow.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/maintenance/{window.pk}/"
    assert Node.objects.get(hostname="n05").state == "maintenance"
    page = client.get(r["Location"]).content.decode()
    assert "PSU swap" in page and "n05" in page and "n06" in page and "End now" in page
    page = client.get("/maintenance/").content.decode()
    assert f"#{window.pk}" in page and "In progress" in page and "mw-bar" in page


def booking_form(nodes: str, *, hours: float = 4, **extra: str) -> dict[str, str]:
    now = timezone.now()
    return {
        "cluster": "c1",
        "nodes": nodes,
        "racks": "",
        "start": local(now),
        "end": local(now + dt.timedelta(hours=hours)),
        "reason": "PSU swap",
        **extra,
    }


def test_booking_on_a_running_job_says_which_job_and_gpus_before_it_is_made(client, users, fleet):
    """docs/maintenance.md, Booking a window: nodes under a running job are named first."""
    client.force_login(users["otto"])
    r = client.post("/maintenance/", booking_form("n[02-05]"))
    page = r.content.decode()
    assert r.status_code == 200 and not MaintenanceWindow.objects.exists()
    assert "A running job is on this window's nodes" in page
    assert "train-70b" in page and "16 of its 32 GPUs" in page and "n02, n03" in page
    assert "Yes, book it in KUAE only (train-70b keeps running)" in page
    job = fleet["job"]
    assert f'name="confirm" value="{job.pk}"' in page
    # A confirmation for other jobs (the nodes were changed) is not this one: asked again.
    r = client.post("/maintenance/", booking_form("n[02-05]", confirm="999"))
    assert r.status_code == 200 and not MaintenanceWindow.objects.exists()
    r = client.post("/maintenance/", booking_form("n[02-05]", confirm=str(job.pk)))
    window = MaintenanceWindow.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/maintenance/{window.pk}/"
    assert Node.objects.get(hostname="n02").state == "maintenance"


def _what_happens(page: str) -> str:
    said = page[page.index('id="what-happens"') :]
    return " ".join(said[: said.index("</p>")].split())


@pytest.mark.parametrize(
    ("actuation", "paused", "why"),
    [
        ("off", False, "Slurm actuation is off for c1"),
        ("dry_run", False, "Slurm actuation is a dry run for c1"),
        ("on", True, "automation is paused on c1"),
        ("on", False, "not for a maintenance window"),
    ],
)
def test_booking_says_what_happens_to_the_jobs_with_actuation_as_it_is(
    client, users, fleet, actuation, paused, why
):
    """docs/maintenance.md: KUAE stops no job and tells Slurm nothing of a window, so the
    booking never promises to stop one; it says Slurm is not told and the job keeps running."""
    from apps.fleet.models import Cluster
    from apps.scheduler.models import Actuation

    Cluster.objects.filter(name="c1").update(actuation=actuation, automation_paused=paused)
    client.force_login(users["otto"])
    page = client.post("/maintenance/", booking_form("n[02-05]")).content.decode()
    said = _what_happens(page)
    assert "Slurm is not told" in said and why in said
    assert "KUAE stops no job: train-70b keeps running on those nodes" in said
    assert "a job that keeps making progress is not interrupted" in said
    assert "stop" not in page[page.index('class="danger"') :].split("</button>")[0]
    assert "each of these jobs is stopped" not in page and "book it and stop" not in page
    job = fleet["job"]
    client.post("/maintenance/", booking_form("n[02-05]", confirm=str(job.pk)))
    assert Node.objects.get(hostname="n02").state == "maintenance"
    assert not Actuation.objects.exists()  # what the page said: nothing went to Slurm


def test_the_strip_names_each_window_by_its_nodes_and_time(client, users, fleet):
    start = (timezone.now() + dt.timedelta(days=1)).replace(hour=14, minute=0)
    w = book(fleet["nodes"][0].cluster, "n[08-11]", start=start, minutes=240, reason="rewire")
    client.force_login(users["mia"])
    page = client.get("/maintenance/").content.decode()
    bar = page[page.index('class="mw-bar') : page.index("</a>", page.index('class="mw-bar'))]
    assert bar.endswith("n[08-11]")  # the chip's words are its nodes, not "#<id> …"
    key = page[page.index(f'id="mw-key-{w.pk}"') :]
    key = key[: key.index("</li>")]
    assert "4 nodes on c1" in key and "14:00 – 18:00 UTC" in key and "rewire" in key


def test_past_count_is_the_windows_held_and_planned_incidents_are_pointed_to(client, users, fleet):
    from apps.incidents.models import Incident

    cluster = fleet["nodes"][0].cluster
    for i in range(3):
        Incident.objects.create(
            cluster=cluster,
            title=f"planned {i}",
            category="host_maintenance",
            severity="sev4",
            detected_at=timezone.now() - dt.timedelta(days=i + 1),
            planned=True,
        )
    w = book(cluster, "n06", start=timezone.now() + dt.timedelta(hours=1))
    MaintenanceWindow.objects.filter(pk=w.pk).update(status="cancelled")
    client.force_login(users["mia"])
    page = client.get("/maintenance/").content.decode()
    head = page[page.index('id="past-h"') : page.index("</h2>", page.index('id="past-h"'))]
    assert "Past and cancelled windows" in head and ">1<" in head
    note = page[page.index('id="planned-elsewhere"') :]
    assert note.startswith('id="planned-elsewhere">3 planned-maintenance incidents had no window')
    assert "/incidents/?category=host_maintenance" in note


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
