"""`POST/GET maintenance/`, `DELETE maintenance/{id}/` (docs/maintenance.md): shapes, 400s,
roles."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Node

pytestmark = pytest.mark.django_db


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def body(**over: object) -> dict[str, object]:
    now = timezone.now()
    return {
        "cluster": "c1",
        "nodes": "n[00-01]",
        "start": iso(now + dt.timedelta(hours=1)),
        "end": iso(now + dt.timedelta(hours=3)),
        "reason": "BIOS update",
        **over,
    }


def test_an_operator_books_by_hostlist_list_or_racks(api, fleet):
    otto = api("otto")
    r = otto.post("/api/v1/maintenance/", body(), format="json")
    assert r.status_code == 201, r.json()
    data = r.json()
    assert data["nodes"] == ["n00", "n01"] and data["cluster"] == "c1"
    assert data["status"] == "scheduled" and data["active"] is False
    assert {"id", "start", "end", "reason", "created_by"} <= set(data)
    r = otto.post(
        "/api/v1/maintenance/",
        body(
            nodes=["n05", "n06"],
            start=iso(timezone.now() + dt.timedelta(hours=5)),
            end=iso(timezone.now() + dt.timedelta(hours=6)),
        ),
        format="json",
    )
    assert r.status_code == 201 and r.json()["nodes"] == ["n05", "n06"]
    r = otto.post(
        "/api/v1/maintenance/",
        {**body(), "nodes": None, "racks": ["rack2"]},
        format="json",
    )
    assert r.status_code == 201, r.json()
    assert r.json()["nodes"] == ["n08", "n09", "n10", "n11"]
    # Nothing changed yet: the windows are in the future.
    assert not Node.objects.exclude(state="healthy").exists()


def test_a_window_that_starts_now_is_applied_at_once(api, fleet):
    r = api("erin").post(
        "/api/v1/maintenance/",
        {
            "cluster": "c1",
            "nodes": "n03",
            "end": iso(timezone.now() + dt.timedelta(hours=1)),
            "reason": "reseat GPU",
        },
        format="json",
    )
    assert r.status_code == 201, r.json()
    assert r.json()["status"] == "active" and r.json()["active"] is True
    assert Node.objects.get(hostname="n03").state == "maintenance"


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"end": iso(timezone.now())}, "end"),  # before start
        ({"nodes": "n[00-99]"}, "nodes"),  # unknown nodes
        ({"nodes": ["n00", "zz9"]}, "nodes"),
        ({"nodes": "n[00-"}, "nodes"),  # not a hostlist
        ({"nodes": "n[1-30000]"}, "nodes"),  # past the hostlist bound
        ({"nodes": 7}, "nodes"),
        ({"nodes": None, "racks": ["rack9"]}, "racks"),
        ({"nodes": None}, "nodes"),  # no nodes at all
        ({"nodes": ""}, "nodes"),
        ({"cluster": "nope"}, "cluster"),
        ({"reason": ""}, "reason"),
        ({"start": "yesterday"}, "start"),
        ({"start": iso(timezone.now() - dt.timedelta(days=1))}, "start"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, fleet, over, field):
    data = {k: v for k, v in body(**over).items() if v is not None}
    r = api("otto").post("/api/v1/maintenance/", data, format="json")
    assert r.status_code == 400, r.json()
    assert field in r.json(), r.json()
    assert "bound" in str(r.json()) or over.get("nodes") != "n[1-30000]"


def test_nodes_already_in_a_window_then_are_a_400(api, fleet):
    otto = api("otto")
    assert otto.post("/api/v1/maintenance/", body(), format="json").status_code == 201
    r = otto.post("/api/v1/maintenance/", body(nodes="n01"), format="json")
    assert r.status_code == 400 and "n01" in str(r.json()["nodes"])


@pytest.mark.parametrize(("who", "code"), [("mia", 403), ("ada", 403), (None, 401)])
def test_only_operators_book(api, fleet, who, code):
    assert api(who).post("/api/v1/maintenance/", body(), format="json").status_code == code


def test_list_filters_by_cluster_and_active(api, fleet, cluster):
    otto = api("otto")
    future = otto.post("/api/v1/maintenance/", body(), format="json").json()
    now = otto.post(
        "/api/v1/maintenance/", body(nodes="n04", start=iso(timezone.now())), format="json"
    ).json()
    mia = api("mia")  # managers read
    r = mia.get("/api/v1/maintenance/?cluster=c1&active=true")
    assert r.status_code == 200
    assert [w["id"] for w in r.json()["results"]] == [now["id"]]
    r = mia.get("/api/v1/maintenance/?active=false")
    assert [w["id"] for w in r.json()["results"]] == [future["id"]]
    assert mia.get("/api/v1/maintenance/?cluster=other").json()["count"] == 0
    assert mia.get(f"/api/v1/maintenance/{now['id']}/").json()["silenced"] == []


def test_delete_ends_a_window_now_and_cancels_a_future_one(api, fleet):
    otto = api("otto")
    future = otto.post("/api/v1/maintenance/", body(), format="json").json()
    now = otto.post(
        "/api/v1/maintenance/", body(nodes="n04", start=iso(timezone.now())), format="json"
    ).json()
    assert Node.objects.get(hostname="n04").state == "maintenance"
    assert api("mia").delete(f"/api/v1/maintenance/{now['id']}/").status_code == 403
    r = otto.delete(f"/api/v1/maintenance/{now['id']}/")
    assert r.status_code == 200 and r.json()["status"] == "ended" and not r.json()["active"]
    assert r.json()["ended_by"] == "otto"
    assert Node.objects.get(hostname="n04").state == "healthy"
    r = otto.delete(f"/api/v1/maintenance/{future['id']}/")
    assert r.json()["status"] == "cancelled"
    assert otto.delete("/api/v1/maintenance/99999/").status_code == 404


def test_booking_on_a_running_job_names_it_in_the_answer(api, fleet):
    """The API tells what the page asks to confirm: the running jobs the window stops, by
    id, name, nodes and GPUs (docs/maintenance.md, Booking a window)."""
    job = fleet["job"]
    r = api("otto").post("/api/v1/maintenance/", body(nodes="n[02-05]"), format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["stops_jobs"] == [
        {"job": job.pk, "name": "train-70b", "nodes": ["n02", "n03"], "gpus": 16}
    ]
    r = api("otto").post(
        "/api/v1/maintenance/",
        body(
            nodes="n[06-07]",
            start=iso(timezone.now() + dt.timedelta(hours=4)),
            end=iso(timezone.now() + dt.timedelta(hours=5)),
        ),
        format="json",
    )
    assert r.status_code == 201 and r.json()["stops_jobs"] == []


def test_a_client_that_confirms_jobs_is_refused_unless_they_are_the_ones(api, fleet):
    from apps.maintenance.models import MaintenanceWindow

    job = fleet["job"]
    otto = api("otto")
    for confirmed in ([], [999_999], [job.pk, 999_999]):
        r = otto.post(
            "/api/v1/maintenance/", body(nodes="n[02-05]", confirm_jobs=confirmed), format="json"
        )
        assert r.status_code == 409, r.json()
        assert "train-70b" in r.json()["confirm_jobs"][0]
        assert [j["job"] for j in r.json()["stops_jobs"]] == [job.pk]
    assert not MaintenanceWindow.objects.exists()
    # Confirming a job on nodes that run none is refused too: the client's picture is wrong.
    r = otto.post(
        "/api/v1/maintenance/", body(nodes="n[08-09]", confirm_jobs=[job.pk]), format="json"
    )
    assert r.status_code == 409 and r.json()["stops_jobs"] == []
    r = otto.post("/api/v1/maintenance/", body(nodes="n[08-09]", confirm_jobs=[]), format="json")
    assert r.status_code == 201, r.json()
    r = otto.post(
        "/api/v1/maintenance/",
        body(nodes="n[02-05]", start=iso(timezone.now()), confirm_jobs=[job.pk]),
        format="json",
    )
    assert r.status_code == 201, r.json()
    assert r.json()["active"] is True and r.json()["stops_jobs"][0]["job"] == job.pk
    assert Node.objects.get(hostname="n02").state == "maintenance"
    r = otto.post("/api/v1/maintenance/", body(confirm_jobs=["x"]), format="json")
    assert r.status_code == 400 and "confirm_jobs" in r.json()
