"""The one rule that nodes named in a write belong to its cluster (`apps/fleet/validators.py`
`nodes_named`), and each endpoint that applies it keeping its own words (docs/api.md)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.fleet.validators import NodesNamed, nodes_named
from apps.incidents.models import Incident
from apps.jobs.models import Job, NodeStepMetric, Rank
from apps.maintenance.models import MaintenanceWindow

pytestmark = pytest.mark.django_db


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


@pytest.fixture
def far(nodes: list[Node]) -> Node:
    """A node of another cluster, c2, beside c1's gpu000–gpu007."""
    other = cluster_create(name="c2", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8)
    (node,) = nodes_register(cluster=other, specs=[NodeSpec(hostname="far001", rack="r9")])
    return node


def test_nodes_named_keeps_the_clusters_own_in_the_order_first_named(
    cluster: Cluster, far: Node, django_assert_num_queries
) -> None:
    with django_assert_num_queries(1):
        named = nodes_named(
            cluster_id=cluster.pk, hostnames=["gpu001", "far001", "gpu000", "gpu001", "ghost"]
        )
    assert list(named.nodes) == ["gpu001", "gpu000"]
    assert all(n.cluster_id == cluster.pk for n in named.nodes.values())
    assert named.unknown == ["far001", "ghost"]  # another cluster's node is not this one's
    with django_assert_num_queries(0):
        assert nodes_named(cluster_id=cluster.pk, hostnames=[]) == NodesNamed({}, [])


def test_job_metrics_refuse_another_clusters_node_per_sample(api, job: Job, far: Node) -> None:
    at = iso(timezone.now())
    samples = [
        {"ts": at, "step": 1, "step_time_s": 10, "node": "gpu000", "compute_s": 8},
        {"ts": at, "step": 1, "step_time_s": 10, "node": "far001", "compute_s": 8},
    ]
    r = api("ada").post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": samples}, format="json")
    assert r.status_code == 400
    assert r.json() == {"samples[1].node": ["unknown node in cluster c1"]}
    assert not NodeStepMetric.objects.exists()


def test_ranks_refuse_another_clusters_node_per_item(api, job: Job, far: Node) -> None:
    started = iso(timezone.now() - dt.timedelta(minutes=5))
    items = [
        {"rank": r, "world_size": 2, "node": h, "local_rank": 0, "started_at": started}
        for r, h in enumerate(["gpu000", "far001"])
    ]
    r = api("ada").post(f"/api/v1/jobs/{job.pk}/ranks/", {"ranks": items}, format="json")
    assert r.status_code == 400
    assert r.json() == {"ranks[1].node": ["unknown node in cluster c1"]}
    assert not Rank.objects.exists()


def test_the_incident_form_refuses_another_clusters_node(client, users, far: Node) -> None:
    client.force_login(users["erin"])
    form = {
        "cluster": "c1",
        "occurred_at": "2026-11-23 07:58:00",
        "title": "NCCL timeout",
        "category": "network_switch_cable",
        "severity": "sev2",
        "nodes": "gpu000,far001,ghost",
    }
    r = client.post("/incidents/new/", form)
    assert r.status_code == 400 and "unknown in c1: far001, ghost" in r.content.decode()
    assert not Incident.objects.exists()
    r = client.post("/incidents/new/", {**form, "nodes": "gpu[000-001]"})
    assert r.status_code == 302
    assert [n.hostname for n in Incident.objects.get().nodes.order_by("hostname")] == [
        "gpu000",
        "gpu001",
    ]


def test_a_maintenance_window_refuses_another_clusters_node(api, far: Node) -> None:
    now = timezone.now()
    body = {
        "cluster": "c1",
        "nodes": ["gpu000", "far001"],
        "start": iso(now + dt.timedelta(hours=1)),
        "end": iso(now + dt.timedelta(hours=2)),
        "reason": "BIOS update",
    }
    r = api("otto").post("/api/v1/maintenance/", body, format="json")
    assert r.status_code == 400 and r.json() == {"nodes": ["not nodes of cluster c1: far001"]}
    assert not MaintenanceWindow.objects.exists()


def test_the_api_refuses_another_clusters_node_on_nodes(api, job: Job, far: Node) -> None:
    r = api("erin").patch(f"/api/v1/jobs/{job.pk}/", {"nodes": ["far001"]}, format="json")
    assert r.status_code == 400 and r.json() == {"nodes": ["unknown in cluster c1: far001"]}
