"""docs/formulas.md, GPUs now: where a cluster's GPUs are — `GET clusters/{name}/` `gpus` — and the
overview's GPU cards counting exactly the same way."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from apps.fleet.choices import NodeState
from apps.fleet.models import Node
from apps.fleet.services import node_set_state
from apps.jobs.services import job_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def busy(cluster, nodes):  # noqa: ANN001, ANN201
    """A running job on gpu000–gpu003 (gpu003 in maintenance), a completed one on gpu004;
    gpu004 drained, gpu005 down, gpu006 suspect, gpu007 healthy."""
    job_create(
        cluster=cluster,
        nodes=nodes[:4],
        name="run",
        gpu_count=32,
        status="running",
        started_at=timezone.now(),
    )
    job_create(
        cluster=cluster,
        nodes=nodes[4:5],
        name="old",
        gpu_count=8,
        status="completed",
        started_at=timezone.now(),
        ended_at=timezone.now(),
    )
    for node, state in zip(nodes[3:7], ("maintenance", "drained", "down", "suspect"), strict=True):
        node_set_state(node=node, state=state, reason="test")
    Node.objects.filter(pk=nodes[1].pk).update(gpu_count=4)  # not every node has eight


def expected(cluster) -> dict:  # noqa: ANN001
    """That accounting, written out here from the nodes and jobs themselves."""
    by_state = dict.fromkeys(NodeState.values, 0)
    allocated = idle = 0
    for node in Node.objects.filter(cluster=cluster).prefetch_related("jobs"):
        by_state[node.state] += node.gpu_count
        if node.state in ("healthy", "suspect"):
            if any(j.status == "running" for j in node.jobs.all()):
                allocated += node.gpu_count
            else:
                idle += node.gpu_count
    total = sum(by_state.values())
    unavailable = by_state["drained"] + by_state["down"] + by_state["maintenance"]
    return {
        "total": total,
        "allocated": allocated,
        "idle": idle,
        "unavailable": unavailable,
        "by_state": by_state,
    }


def test_cluster_api_counts_gpus_by_where_they_are(api, cluster, busy):
    body = api("mia").get("/api/v1/clusters/c1/").json()
    gpus = body["gpus"]
    assert gpus == expected(cluster)
    assert gpus["allocated"] + gpus["idle"] + gpus["unavailable"] == gpus["total"]
    assert gpus["total"] == body["gpu_count"] and gpus["allocated"] > 0 and gpus["idle"] > 0
    assert gpus["by_state"]["maintenance"] == 8  # gpu003 runs the job but is out of service


def test_overview_cards_use_the_same_accounting(client, users, api, busy):
    gpus = api("mia").get("/api/v1/clusters/c1/").json()["gpus"]
    client.force_login(users["mia"])
    html = client.get("/?cluster=c1").content.decode()
    for key in ("allocated", "idle", "unavailable"):
        assert re.search(rf'data-gpus-{key}="(\d+)"', html)[1] == str(gpus[key])
    card = re.search(r"GPUs unavailable.*?</div>", html, re.S)[0]
    s = gpus["by_state"]
    assert f"{s['drained']} drained · {s['down']} down · {s['maintenance']} in maintenance" in card
    assert "GPUs available" not in html and "GPUs in use" not in html
    assert f"{gpus['total']} GPUs in" in html


def test_a_cluster_without_nodes_counts_zero_not_null(api):
    body = {"name": "empty", "gpu_model": "H100", "peak_tflops_per_gpu": 989.4, "gpus_per_node": 8}
    assert api("root").post("/api/v1/clusters/", body, format="json").status_code == 201
    detail = api("mia").get("/api/v1/clusters/empty/").json()
    assert detail["node_count"] == 0 and detail["gpu_count"] == 0
    assert detail["gpus"]["total"] == 0 and detail["gpus"]["by_state"]["healthy"] == 0
    listed = api("mia").get("/api/v1/clusters/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert all(isinstance(c["gpu_count"], int) for c in rows)
