"""Clusters and nodes endpoints (docs/api.md, Clusters; Nodes)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import GPU, Node, NodeStateChange

pytestmark = pytest.mark.django_db


def test_create_cluster_and_read_counts(api, nodes):
    root = api("root")
    body = {"name": "kuae-b", "gpu_model": "H100", "peak_tflops_per_gpu": 989.4, "gpus_per_node": 8}
    created = root.post("/api/v1/clusters/", body, format="json")
    assert created.status_code == 201
    assert created.json()["name"] == "kuae-b" and created.json()["node_count"] == 0
    detail = api("mia").get("/api/v1/clusters/c1/").json()
    assert detail["node_count"] == 8 and detail["gpu_count"] == 64


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            {
                "name": "Not A Slug",
                "gpu_model": "H100",
                "peak_tflops_per_gpu": 1,
                "gpus_per_node": 8,
            },
            "name",
        ),
        (
            {"name": "ok", "gpu_model": "H100", "peak_tflops_per_gpu": -5, "gpus_per_node": 8},
            "peak_tflops_per_gpu",
        ),
        (
            {"name": "ok", "gpu_model": "H100", "peak_tflops_per_gpu": 1, "gpus_per_node": 0},
            "gpus_per_node",
        ),
        ({"name": "ok", "peak_tflops_per_gpu": 1, "gpus_per_node": 8}, "gpu_model"),
    ],
)
def test_bad_cluster_is_400_naming_the_field(api, body, field):
    response = api("root").post("/api/v1/clusters/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_duplicate_cluster_name_is_400(api, cluster):
    body = {"name": "c1", "gpu_model": "H100", "peak_tflops_per_gpu": 1, "gpus_per_node": 8}
    response = api("root").post("/api/v1/clusters/", body, format="json")
    assert response.status_code == 400 and "name" in response.json()


def test_register_node_creates_gpus_and_history(api, cluster):
    when = "2026-01-05T00:00:00Z"
    response = api("otto").post(
        "/api/v1/nodes/",
        {
            "hostname": "gpu-a017",
            "cluster": "c1",
            "rack": "a",
            "in_service_at": when,
            "exporter_url": "http://gpu-a017:9400/metrics",
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    node = Node.objects.get(hostname="gpu-a017")
    assert node.gpu_count == 8 and GPU.objects.filter(node=node).count() == 8
    assert node.in_service_at == dt.datetime(2026, 1, 5, tzinfo=dt.UTC)
    assert NodeStateChange.objects.get(node=node).state == "healthy"


def test_reposting_a_node_is_idempotent(api, cluster):
    body = {"hostname": "gpu-a017", "cluster": "c1"}
    assert api("otto").post("/api/v1/nodes/", body, format="json").status_code == 201
    again = api("otto").post("/api/v1/nodes/", {**body, "rack": "b"}, format="json")
    assert again.status_code == 200 and again.json()["rack"] == "b"
    assert Node.objects.filter(hostname="gpu-a017").count() == 1
    assert GPU.objects.filter(node__hostname="gpu-a017").count() == 8


def test_node_in_another_cluster_is_400(api, cluster, nodes):
    api("root").post(
        "/api/v1/clusters/",
        {"name": "c2", "gpu_model": "A100", "peak_tflops_per_gpu": 312, "gpus_per_node": 8},
        format="json",
    )
    response = api("otto").post(
        "/api/v1/nodes/", {"hostname": "gpu000", "cluster": "c2"}, format="json"
    )
    assert response.status_code == 400 and "hostname" in response.json()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"hostname": "bad host!", "cluster": "c1"}, "hostname"),
        ({"hostname": "ok", "cluster": "nope"}, "cluster"),
        ({"hostname": "ok", "cluster": "c1", "gpu_count": 999}, "gpu_count"),
        ({"hostname": "ok", "cluster": "c1", "in_service_at": "yesterday"}, "in_service_at"),
        ({"hostname": "ok", "cluster": "c1", "exporter_url": "not a url"}, "exporter_url"),
    ],
)
def test_bad_node_is_400_naming_the_field(api, cluster, body, field):
    response = api("otto").post("/api/v1/nodes/", body, format="json")
    assert response.status_code == 400 and field in response.json()
    assert not Node.objects.filter(hostname="ok").exists()


def test_node_list_filters_and_paginates(api, nodes):
    client = api("mia")
    page = client.get("/api/v1/nodes/?cluster=c1&page_size=3").json()
    assert page["count"] == 8 and len(page["results"]) == 3 and page["next"]
    assert [n["hostname"] for n in page["results"]] == ["gpu000", "gpu001", "gpu002"]
    assert client.get("/api/v1/nodes/?rack=r1").json()["count"] == 4
    api("otto").post(
        "/api/v1/nodes/gpu005/state/", {"state": "drained", "reason": "xid 79"}, format="json"
    )
    drained = client.get("/api/v1/nodes/?state=drained").json()
    assert [n["hostname"] for n in drained["results"]] == ["gpu005"]
    assert client.get("/api/v1/nodes/?state=bogus").status_code == 400
    assert client.get("/api/v1/nodes/?page_size=5000").json()["count"] == 8


def test_node_list_query_count_does_not_grow(api, nodes, django_assert_max_num_queries):
    client = api("mia")
    with django_assert_max_num_queries(6):
        assert client.get("/api/v1/nodes/?page_size=1000").status_code == 200


def test_node_detail_has_gpus_with_latest_values(api, nodes):
    GPU.objects.filter(node=nodes[0], index=2).update(
        metrics={"temp_c": 71}, updated_at=timezone.now()
    )
    body = api("mia").get("/api/v1/nodes/gpu000/").json()
    assert body["state"] == "healthy" and len(body["gpus"]) == 8
    assert body["gpus"][2]["metrics"] == {"temp_c": 71}
    assert api("mia").get("/api/v1/nodes/nope/").status_code == 404


def test_state_change_and_backfill(api, nodes):
    client = api("otto")
    now = timezone.now()
    response = client.post(
        "/api/v1/nodes/gpu001/state/", {"state": "down", "reason": "no heartbeat"}, format="json"
    )
    assert response.status_code == 200 and response.json()["state"] == "down"
    # A back-filled change older than the newest one adds history but not the current state.
    earlier = (now - dt.timedelta(days=3)).isoformat()
    back = client.post(
        "/api/v1/nodes/gpu001/state/",
        {"state": "maintenance", "reason": "firmware", "at": earlier},
        format="json",
    )
    assert back.status_code == 200 and back.json()["state"] == "down"
    history = list(
        NodeStateChange.objects.filter(node__hostname="gpu001")
        .order_by("at")
        .values_list("state", flat=True)
    )
    assert history == ["healthy", "maintenance", "down"]
    assert Node.objects.get(hostname="gpu001").state_reason == "no heartbeat"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"state": "broken", "reason": "x"}, "state"),
        ({"state": "down"}, "reason"),
        ({"state": "down", "reason": "x", "at": "2020-01-01T00:00:00Z"}, "at"),
        ({"state": "down", "reason": "x", "at": "2999-01-01T00:00:00Z"}, "at"),
    ],
)
def test_bad_state_change_is_400(api, nodes, body, field):
    response = api("otto").post("/api/v1/nodes/gpu001/state/", body, format="json")
    assert response.status_code == 400 and field in response.json()
    assert Node.objects.get(hostname="gpu001").state == "healthy"


def test_heartbeat_uses_server_time(api, nodes):
    before = timezone.now()
    response = api("ada").post(
        "/api/v1/nodes/gpu003/heartbeat/", {"ts": "2001-01-01T00:00:00Z"}, format="json"
    )
    assert response.status_code == 204
    node = Node.objects.get(hostname="gpu003")
    assert node.last_heartbeat_at >= before and node.last_seen_at >= before
    assert api("ada").post("/api/v1/nodes/nope/heartbeat/", {}, format="json").status_code == 404
