"""Incidents endpoints: file, list, edit with an audit trail; roles (docs/incidents.md)."""

from __future__ import annotations

import pytest

from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.incidents.models import Incident, TimelineEntry

pytestmark = pytest.mark.django_db

BODY = {
    "title": "XID 79 on gpu001",
    "cluster": "c1",
    "category": "gpu",
    "severity": "sev2",
    "occurred_at": "2026-11-23T08:00:00Z",
    "detected_at": "2026-11-23T08:01:00Z",
    "interrupts_job": True,
    "planned": False,
    "nodes": ["gpu001"],
}


def test_engineer_files_and_everyone_reads(api, nodes, job):
    response = api("erin").post("/api/v1/incidents/", {**BODY, "job": job.pk}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["nodes"] == ["gpu001"] and body["job"] == job.pk and body["status"] == "open"
    assert body["timeline"][0]["kind"] == "opened" and body["timeline"][0]["actor"] == "erin"
    listed = api("mia").get("/api/v1/incidents/?cluster=c1&status=open&category=gpu").json()
    assert listed["count"] == 1
    window = "start=2026-11-23T07:00:00Z&end=2026-11-23T09:00:00Z"
    assert api("mia").get(f"/api/v1/incidents/?{window}").json()["count"] == 1
    assert api("mia").get("/api/v1/incidents/?start=2026-11-24T00:00:00Z").json()["count"] == 0


@pytest.mark.parametrize("persona", ["mia", "otto", "ada"])
def test_managers_operators_and_agents_cannot_file(api, nodes, persona):
    assert api(persona).post("/api/v1/incidents/", BODY, format="json").status_code == 403
    assert Incident.objects.count() == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"category": "cosmic_rays"}, "category"),
        ({"severity": "sev9"}, "severity"),
        ({"recovered_at": "2026-11-23T07:00:00Z"}, "recovered_at"),  # before the failure
        ({"nodes": ["ghost"]}, "nodes"),
        ({"detected_at": None}, "detected_at"),
    ],
)
def test_bad_incidents_are_400(api, nodes, change, field):
    response = api("erin").post("/api/v1/incidents/", {**BODY, **change}, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()
    assert Incident.objects.count() == 0


def test_every_change_lands_in_the_timeline(api, nodes):
    pk = api("erin").post("/api/v1/incidents/", BODY, format="json").json()["id"]
    # An operator acknowledges and sets the times...
    ack = api("otto").patch(
        f"/api/v1/incidents/{pk}/",
        {"status": "investigating", "localized_at": "2026-11-23T08:05:00Z"},
        format="json",
    )
    assert ack.status_code == 200
    # ...but may not resolve it or change its category.
    assert (
        api("otto")
        .patch(f"/api/v1/incidents/{pk}/", {"status": "resolved"}, format="json")
        .status_code
        == 403
    )
    assert (
        api("otto")
        .patch(f"/api/v1/incidents/{pk}/", {"category": "nic"}, format="json")
        .status_code
        == 403
    )
    done = api("eve").patch(
        f"/api/v1/incidents/{pk}/",
        {
            "status": "resolved",
            "recovered_at": "2026-11-23T08:30:00Z",
            "nodes": ["gpu001", "gpu002"],
        },
        format="json",
    )
    assert done.status_code == 200 and done.json()["resolved_at"]
    lines = list(TimelineEntry.objects.filter(incident_id=pk).values_list("actor", "text"))
    assert lines[1][0] == "otto" and "status: open → investigating" in lines[1][1]
    assert "localized_at: — → 2026-11-23 08:05:00Z" in lines[1][1]
    assert lines[2][0] == "eve" and "nodes: gpu001 → gpu001, gpu002" in lines[2][1]
    bad = api("eve").patch(
        f"/api/v1/incidents/{pk}/", {"recovered_at": "2026-11-23T07:00:00Z"}, format="json"
    )
    assert bad.status_code == 400 and "recovered_at" in bad.json()


def test_incident_list_query_count(api, nodes, django_assert_max_num_queries):
    for i in range(20):
        api("erin").post("/api/v1/incidents/", {**BODY, "title": f"t{i}"}, format="json")
    with django_assert_max_num_queries(6):
        assert api("mia").get("/api/v1/incidents/?page_size=100").json()["count"] == 20


def test_nodes_must_be_this_clusters(api, nodes):
    """Another cluster's node is refused as an unknown one, with the words jobs use too."""
    other = cluster_create(name="c2", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8)
    nodes_register(cluster=other, specs=[NodeSpec(hostname="far001")])
    body = {**BODY, "nodes": ["gpu001", "far001", "ghost", "far001"]}
    response = api("erin").post("/api/v1/incidents/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"nodes": ["unknown in cluster c1: far001, ghost"]}
    ghosts = [f"ghost{i:02d}" for i in range(25)]  # the message names the first 20
    answer = api("erin").post("/api/v1/incidents/", {**BODY, "nodes": ghosts}, format="json")
    assert answer.json()["nodes"] == [f"unknown in cluster c1: {', '.join(ghosts[:20])}"]
    assert Incident.objects.count() == 0
    listed = {**BODY, "nodes": ["gpu002", "gpu001", "gpu002"]}  # a repeat counts once
    created = api("erin").post("/api/v1/incidents/", listed, format="json").json()
    assert sorted(created["nodes"]) == ["gpu001", "gpu002"]


def test_filing_with_an_assignee_names_them(api, nodes):
    """Issue 32: the documented `assignee` on `POST incidents/` answered 500."""
    response = api("erin").post("/api/v1/incidents/", {**BODY, "assignee": "otto"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["assignee"] == "otto"
    assert Incident.objects.get().assignee == "otto"


def test_filing_with_an_unknown_assignee_is_400_naming_it(api, nodes):
    response = api("erin").post(
        "/api/v1/incidents/", {**BODY, "assignee": "nobody-here"}, format="json"
    )
    assert response.status_code == 400 and "assignee" in response.json(), response.content
    assert Incident.objects.count() == 0
