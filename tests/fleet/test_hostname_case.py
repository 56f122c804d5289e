"""Hostnames compare without regard to case, as DNS names do (docs/operations.md, Limits):
`R007N01` is `r007n01`, never a second node — through every door a hostname comes in by."""

from __future__ import annotations

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.choices import Role
from apps.accounts.services import token_issue, user_create_or_update
from apps.common.hostnames import Hostlists, hostname_clean
from apps.fleet.models import GPU, Node
from apps.fleet.services import NodeSpec, agent_scope_set, nodes_register
from apps.jobs.models import Job
from apps.scheduler.services import slurm_ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def r007n01(cluster):  # noqa: ANN001, ANN201
    return nodes_register(cluster=cluster, specs=[NodeSpec(hostname="r007n01")])[0]


def test_slurm_intake_finds_the_node_in_any_case(r007n01):
    """The red team's record naming `R007N01` made a second node beside r007n01."""
    record = {
        "job_id": 7,
        "name": "train",
        "nodes": "R007N[01-02]",
        "failed_node": "R007N01",
        "state": {"current": ["NODE_FAIL"]},
        "time": {"submission": 1_796_000_000, "start": 1_796_000_010, "end": 1_796_000_600},
    }
    answer = slurm_ingest(cluster_name="c1", payload={"jobs": [record]})
    assert answer["created"] == 1 and answer["incidents"] == 1
    assert sorted(Node.objects.values_list("hostname", flat=True)) == ["r007n01", "r007n02"]
    job = Job.objects.get()
    assert sorted(job.nodes.values_list("hostname", flat=True)) == ["r007n01", "r007n02"]
    assert list(job.incidents.get().nodes.all()) == [r007n01]


def test_telemetry_intake_finds_the_node_in_any_case(api, r007n01):
    now = timezone.now().isoformat()
    body = {"samples": [{"node": "R007N01", "gpu": 0, "ts": now, "metrics": {"temp_c": 61}}]}
    answer = api("ada").post("/api/v1/ingest/telemetry/", body, format="json")
    assert answer.status_code == 202, answer.content
    assert GPU.objects.get(node=r007n01, index=0).metrics["temp_c"] == 61
    events = {"events": [{"node": "R007n01", "ts": now, "kind": "xid", "code": 79, "gpu": 0}]}
    assert api("ada").post("/api/v1/ingest/events/", events, format="json").status_code == 202
    assert Node.objects.count() == 1


def test_prometheus_intake_finds_the_node_in_any_case(api, r007n01):
    text = 'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="R007N01"} 58\n'
    answer = api("ada").post("/api/v1/ingest/prometheus/", text, content_type="text/plain")
    assert answer.status_code == 202, answer.content
    assert GPU.objects.get(node=r007n01, index=0).metrics
    assert Node.objects.count() == 1


def test_registration_keeps_lower_case_and_never_makes_a_second_node(api, cluster, r007n01):
    otto = api("otto")
    body = {"hostname": "R007N02", "cluster": "c1"}
    assert otto.post("/api/v1/nodes/", body, format="json").status_code == 201
    assert Node.objects.filter(hostname="r007n02").exists()
    again = otto.post(
        "/api/v1/nodes/", {"hostname": "R007N01", "cluster": "c1", "rack": "r7"}, format="json"
    )
    assert again.status_code == 200, again.content  # r007n01's registration, updated
    r007n01.refresh_from_db()
    assert r007n01.rack == "r7"
    assert sorted(Node.objects.values_list("hostname", flat=True)) == ["r007n01", "r007n02"]
    assert otto.get("/api/v1/nodes/R007N01/").json()["hostname"] == "r007n01"


def test_a_scoped_token_and_heartbeats_compare_lower_case(r007n01):
    """`create_user --nodes R007N01` scopes the token to r007n01, and its heartbeat to
    `nodes/R007N01/heartbeat/` is r007n01's."""
    user = user_create_or_update(username="agent-r007n01", role=Role.AGENT)
    agent_scope_set(user=user, cluster="c1", hostlist="R007N01")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    for path in ("R007N01", "r007n01"):
        answer = client.post(f"/api/v1/nodes/{path}/heartbeat/", {}, format="json")
        assert answer.status_code == 204, answer.content
    r007n01.refresh_from_db()
    assert r007n01.last_seen_at is not None


def test_hostnames_and_hostlists_are_lower_case():
    assert hostname_clean("R007N01.Example.COM") == "r007n01.example.com"
    assert Hostlists().hostnames("GPU[1-2],gpu1") == ["gpu1", "gpu2"]
