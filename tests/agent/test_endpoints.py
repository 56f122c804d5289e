"""The two reads an agent token has, both about itself (agents never read;
docs/agent.md: the Reporter, the prolog): its job's id by Slurm id, and whether its node may take a
job."""

from __future__ import annotations

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.services import agent_scope_set, cluster_create
from apps.health.models import CheckResult
from apps.jobs.services import job_create

pytestmark = pytest.mark.django_db


def agent_client(name: str, cluster: str | None = None, hostlist: str = "") -> APIClient:
    user = user_create_or_update(username=name, role="agent")
    if cluster:
        agent_scope_set(user=user, cluster=cluster, hostlist=hostlist)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


def lookup(client: APIClient, **params: str):  # noqa: ANN201
    return client.get("/api/v1/jobs/", params)


def test_an_agent_finds_its_job_by_slurm_id_and_reads_nothing_else(api, job, nodes):
    job.external_id = "4242"
    job.save(update_fields=["external_id"])
    other = cluster_create(name="c2", gpu_model="H100", peak_tflops_per_gpu=1, gpus_per_node=8)
    job_create(cluster=other, nodes=[], name="c2 run", gpu_count=8, external_id="4242")
    ada = api("ada")  # an unscoped (fleet) agent
    found = lookup(ada, external_id="4242", cluster="c1")
    assert found.status_code == 200
    assert found.json() == {"count": 1, "next": None, "previous": None, "results": [{"id": job.pk}]}
    assert lookup(ada, external_id="9", cluster="c1").json()["results"] == []
    missing = lookup(ada, cluster="c1")
    assert missing.status_code == 400 and list(missing.json()) == ["external_id"]
    assert lookup(ada).status_code == 400  # no listing the fleet's jobs
    assert ada.get(f"/api/v1/jobs/{job.pk}/").status_code == 403  # nor reading one
    # A node's token: its cluster only, and only jobs on its nodes.
    mine = agent_client("n0", "c1", "gpu000")
    assert lookup(mine, external_id="4242", cluster="c1").json()["results"] == [{"id": job.pk}]
    assert lookup(mine, external_id="4242", cluster="c2").status_code == 403
    idle = agent_client("n7", "c1", "gpu007")  # the job does not run on gpu007
    assert lookup(idle, external_id="4242", cluster="c1").json()["results"] == []
    # People list and filter as before.
    rows = api("mia").get("/api/v1/jobs/", {"external_id": "4242"}).json()["results"]
    assert sorted(r["cluster"] for r in rows) == ["c1", "c2"] and "name" in rows[0]


def test_admission_answers_for_a_node(api, nodes):
    mia = api("mia")
    healthy = mia.get("/api/v1/nodes/gpu000/admission/")
    assert healthy.status_code == 200
    assert healthy.json() == {"ok": True, "state": "healthy", "problems": []}
    node = nodes[1]
    node.state, node.state_reason = "drained", "xid 79"
    node.save(update_fields=["state", "state_reason"])
    now = timezone.now()
    for kind, target, status in [
        ("xid", "gpu:gpu001/3", "fail"),
        ("thermal", "node:gpu001", "warn"),  # a warning admits
        ("ecc", "gpu:gpu001/0", "pass"),
    ]:
        CheckResult.objects.create(
            cluster=node.cluster,
            kind=kind,
            target=target,
            node=node,
            status=status,
            message="XID 79 on GPU 3",
            at=now,
            since=now,
        )
    refused = mia.get("/api/v1/nodes/gpu001/admission/").json()
    assert refused["ok"] is False and refused["state"] == "drained"
    assert refused["problems"] == [
        {"kind": "state", "target": "node:gpu001", "reason": "state drained: xid 79"},
        {
            "kind": "xid",
            "target": "gpu:gpu001/3",
            "reason": "failed the xid check: XID 79 on GPU 3",
        },
    ]
    assert mia.get("/api/v1/nodes/nope/admission/").status_code == 404


def test_admission_for_agents_is_about_their_own_nodes(api, nodes):
    assert (
        agent_client("n0", "c1", "gpu000").get("/api/v1/nodes/gpu000/admission/").status_code == 200
    )
    assert (
        agent_client("n1", "c1", "gpu000").get("/api/v1/nodes/gpu001/admission/").status_code == 403
    )
    relay = agent_client("relay", "c1")
    assert relay.get("/api/v1/nodes/gpu005/admission/").status_code == 200
    cluster_create(name="c2", gpu_model="H100", peak_tflops_per_gpu=1, gpus_per_node=8)
    assert agent_client("r2", "c2").get("/api/v1/nodes/gpu005/admission/").status_code == 403
    assert api("ada").get("/api/v1/nodes/gpu005/admission/").status_code == 200  # fleet relay
    assert api(None).get("/api/v1/nodes/gpu005/admission/").status_code == 401
