"""Agent tokens are scoped (docs/operations.md, Agent tokens and scopes), written as the attacks of
issue 16: an attacker who holds one GPU node's agent token (every node runs users' code and holds
one).

A node's token writes telemetry, events, heartbeats and per-node samples for its nodes only,
and job metrics, checkpoints and preflight for jobs that run on them; a cluster's token for
its cluster; outside → 403 and nothing stored. Agents never read back what they wrote. No
sample, event or heartbeat may be stamped more than 5 minutes ahead (400 naming it).
"""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.test import APIClient, APIRequestFactory

from apps.accounts.authentication import user_for_token
from apps.accounts.choices import Role
from apps.accounts.models import User
from apps.accounts.permissions import RolePermission
from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.models import GPU, MAX_SCOPE_NODES, AgentScope, Node, scope_hostnames
from apps.fleet.scope import scope_of
from apps.fleet.services import NodeSpec, agent_scope_set, cluster_create, nodes_register
from apps.health.services import runs_execute_now
from apps.incidents.models import Incident, UnroutedAlert
from apps.jobs.models import Checkpoint, Job, JobMetric, NodeStepMetric
from apps.telemetry.models import TelemetryEvent
from tests.incidents.webhooks import URL as ALERTMANAGER
from tests.incidents.webhooks import alert, webhook
from tests.support import DCGM_SAMPLE, SHARED

pytestmark = pytest.mark.django_db

TELEMETRY = "/api/v1/ingest/telemetry/"
FUTURE = "2099-01-01T00:00:00Z"


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def now_iso(seconds: float = 0) -> str:
    return iso(timezone.now() + dt.timedelta(seconds=seconds))


def client_for(username: str, cluster: str | None = None, nodes: str = "") -> APIClient:
    """An agent account (scoped when `cluster` is given) and an API client with its token."""
    user = user_create_or_update(username=username, role=Role.AGENT)
    if cluster is not None:
        agent_scope_set(user=user, cluster=cluster, hostlist=nodes)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


def sweep(host: str, gpu: int, ts: str | None = None, **metrics: float) -> dict:
    return {"samples": [{"node": host, "gpu": gpu, "ts": ts or now_iso(), "metrics": metrics}]}


@pytest.fixture
def other_cluster(db):  # noqa: ANN001, ANN201
    c2 = cluster_create(name="c2", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8)
    nodes_register(cluster=c2, specs=[NodeSpec(hostname="x000", in_service_at=timezone.now())])
    return c2


@pytest.fixture
def node0(nodes) -> APIClient:  # noqa: ANN001
    """The attacker: the agent token of gpu000 (a node of the job on gpu000–gpu003)."""
    return client_for("agent-gpu000", "c1", "gpu000")


# --- A node's token speaks for its node only ------------------------------------------------


def test_forged_xid_and_ecc_for_another_node_is_refused_and_it_is_not_drained(
    cluster, nodes, node0
):
    before = GPU.objects.get(node__hostname="gpu005", index=2).metrics
    for metrics in ({"xid": 0, "ecc_dbe_total": 0}, {"xid": 79, "ecc_dbe_total": 3}):
        response = node0.post(TELEMETRY, sweep("gpu005", 2, **metrics), format="json")
        assert response.status_code == 403, response.content
        assert "gpu005" in response.json()["detail"]
    assert GPU.objects.get(node__hostname="gpu005", index=2).metrics == before
    assert not TelemetryEvent.objects.exists()
    (run,) = runs_execute_now(cluster=cluster, kinds=["gpu_errors"], requested_by="test")
    assert run.status == "done", run.error
    assert Node.objects.get(hostname="gpu005").state == "healthy"
    assert not Incident.objects.exists()


def test_a_batch_with_one_foreign_sample_stores_nothing(nodes, node0):
    body = sweep("gpu000", 0, temp_c=60)
    body["samples"] += sweep("gpu001", 0, temp_c=99)["samples"]
    assert node0.post(TELEMETRY, body, format="json").status_code == 403
    assert GPU.objects.get(node__hostname="gpu000", index=0).updated_at is None
    assert node0.post(TELEMETRY, sweep("gpu000", 0, temp_c=60), format="json").status_code == 202
    assert GPU.objects.get(node__hostname="gpu000", index=0).metrics == {"temp_c": 60}


def test_prometheus_text_for_another_node_is_refused(nodes, node0):
    text = DCGM_SAMPLE.read_text()
    url = "/api/v1/ingest/prometheus/"
    for node in ("gpu005", "gpu001"):
        response = node0.generic("POST", f"{url}?node={node}", text, content_type="text/plain")
        assert response.status_code == 403
    assert not GPU.objects.filter(updated_at__isnull=False).exists()
    ok = node0.generic("POST", f"{url}?node=gpu000", text, content_type="text/plain")
    assert ok.status_code == 202


def test_kernel_events_for_another_node_are_refused(nodes, node0):
    def events(host: str) -> dict:
        return {"events": [{"node": host, "ts": now_iso(), "kind": "xid", "code": 79, "gpu": 1}]}

    assert node0.post("/api/v1/ingest/events/", events("gpu006"), format="json").status_code == 403
    assert not TelemetryEvent.objects.exists()
    assert node0.post("/api/v1/ingest/events/", events("gpu000"), format="json").status_code == 202


def test_heartbeats_cannot_keep_another_node_alive(nodes, node0):
    dead = timezone.now() - dt.timedelta(hours=1)
    Node.objects.filter(hostname="gpu004").update(last_heartbeat_at=dead, last_seen_at=dead)
    response = node0.post("/api/v1/nodes/gpu004/heartbeat/", {}, format="json")
    assert response.status_code == 403
    assert Node.objects.get(hostname="gpu004").last_heartbeat_at == dead
    # A node that does not exist is refused the same way (no probing for hostnames).
    assert node0.post("/api/v1/nodes/nope/heartbeat/", {}, format="json").status_code == 403
    assert node0.post("/api/v1/nodes/gpu000/heartbeat/", {}, format="json").status_code == 204


def test_a_hostname_in_the_scope_but_in_another_cluster_is_refused(nodes, other_cluster):
    sneaky = client_for("sneaky", "c1", "gpu000,x000")  # x000 is a c2 node
    assert sneaky.post(TELEMETRY, sweep("x000", 0, temp_c=1), format="json").status_code == 403
    assert sneaky.post("/api/v1/nodes/x000/heartbeat/", {}, format="json").status_code == 403


# --- Jobs: only those that run on its nodes -------------------------------------------------


def test_a_job_on_other_nodes_is_refused_for_every_write(job):
    outsider = client_for("agent-gpu005", "c1", "gpu005")  # the job runs on gpu000–gpu003
    base = f"/api/v1/jobs/{job.pk}"
    metrics = {"samples": [{"ts": now_iso(), "step": 1, "step_time_s": 1, "tokens_per_s": 9}]}
    checkpoint = {"step": 1, "saved_at": now_iso(), "blocking_s": 5}
    for url, body in (
        (f"{base}/metrics/", metrics),
        (f"{base}/checkpoints/", checkpoint),
        (f"{base}/preflight/", {}),
    ):
        response = outsider.post(url, body, format="json")
        assert response.status_code == 403, url
        assert f"job {job.pk}" in response.json()["detail"]
    assert outsider.patch(f"{base}/", {"name": "pwned"}, format="json").status_code == 403
    job.refresh_from_db()
    assert job.name == "llama-70b"
    assert not JobMetric.objects.exists() and not Checkpoint.objects.exists()


def test_a_node_of_the_job_writes_for_it_but_not_for_the_other_nodes_timings(job, node0):
    base = f"/api/v1/jobs/{job.pk}"
    wide = {"ts": now_iso(), "step": 1, "step_time_s": 1.0, "tokens_per_s": 9.0}
    mine = {"ts": now_iso(), "step": 1, "step_time_s": 1.0, "node": "gpu000"}
    theirs = {**mine, "node": "gpu002"}
    refused = node0.post(f"{base}/metrics/", {"samples": [wide, theirs]}, format="json")
    assert refused.status_code == 403 and "gpu002" in refused.json()["detail"]
    assert not JobMetric.objects.exists() and not NodeStepMetric.objects.exists()
    # Job-wide samples: any node of the job until ranks are registered (rank 0's Reporter
    # may post before its watchdog registers it), then only the node holding rank 0.
    ok = node0.post(f"{base}/metrics/", {"samples": [wide, mine]}, format="json")
    assert ok.status_code == 202 and ok.json() == {"accepted": 2}
    rank0 = {"rank": 0, "world_size": 32, "node": "gpu001", "started_at": now_iso(-60)}
    node1 = client_for("agent-gpu001", "c1", "gpu001")
    assert node1.post(f"{base}/ranks/", {"ranks": [rank0]}, format="json").status_code == 202
    later = {**wide, "ts": now_iso(), "step": 2}
    whole = node0.post(f"{base}/metrics/", {"samples": [later]}, format="json")
    assert whole.status_code == 403 and "job-wide samples" in whole.json()["detail"]
    assert node1.post(f"{base}/metrics/", {"samples": [later]}, format="json").status_code == 202
    saved = {"step": 1, "saved_at": now_iso(), "blocking_s": 5}
    assert node0.post(f"{base}/checkpoints/", saved, format="json").status_code == 201
    assert node0.post(f"{base}/preflight/", {}, format="json").status_code == 200


def test_a_node_cannot_register_or_move_a_job_away_from_its_nodes(job, node0):
    body = {"name": "fake", "cluster": "c1", "gpu_count": 8, "nodes": ["gpu006"]}
    assert node0.post("/api/v1/jobs/", body, format="json").status_code == 403
    assert node0.post("/api/v1/jobs/", {**body, "nodes": []}, format="json").status_code == 403
    assert Job.objects.count() == 1
    moved = node0.patch(f"/api/v1/jobs/{job.pk}/", {"nodes": ["gpu006"]}, format="json")
    assert moved.status_code == 403
    assert sorted(job.nodes.values_list("hostname", flat=True)) == [f"gpu00{i}" for i in range(4)]
    # Re-registering someone else's run by its external id is taking it over: refused too.
    Job.objects.filter(pk=job.pk).update(external_id="slurm-1")
    outsider = client_for("agent-gpu006", "c1", "gpu006")
    takeover = {**body, "external_id": "slurm-1", "name": "mine now"}
    assert outsider.post("/api/v1/jobs/", takeover, format="json").status_code == 403
    job.refresh_from_db()
    assert job.name == "llama-70b"
    own = {**body, "nodes": ["gpu000", "gpu001"], "name": "mine"}
    created = node0.post("/api/v1/jobs/", own, format="json")
    assert created.status_code == 201


# --- A cluster's token: its cluster only ----------------------------------------------------


def test_a_cluster_token_cannot_write_for_another_cluster(job, other_cluster):
    relay = client_for("relay-c2", "c2")
    assert relay.post(TELEMETRY, sweep("gpu000", 0, temp_c=1), format="json").status_code == 403
    assert relay.post("/api/v1/nodes/gpu000/heartbeat/", {}, format="json").status_code == 403
    metrics = {"samples": [{"ts": now_iso(), "step": 1, "step_time_s": 1, "tokens_per_s": 9}]}
    assert relay.post(f"/api/v1/jobs/{job.pk}/metrics/", metrics, format="json").status_code == 403
    assert relay.patch(f"/api/v1/jobs/{job.pk}/", {}, format="json").status_code == 403
    body = {"name": "x", "cluster": "c1", "gpu_count": 8}
    assert relay.post("/api/v1/jobs/", body, format="json").status_code == 403
    assert relay.post(TELEMETRY, sweep("x000", 0, temp_c=1), format="json").status_code == 202
    assert relay.post("/api/v1/jobs/", {**body, "cluster": "c2"}, format="json").status_code == 201


def _slurm_body() -> dict:
    return json.loads((SHARED / "slurm" / "slurmdb-job-gpus-running.json").read_text())


def test_slurm_from_a_cluster_token_must_name_its_cluster(cluster, other_cluster, node0):
    relay = client_for("slurm-c2", "c2")
    body = _slurm_body()
    for query in ("?cluster=c1", ""):
        response = relay.post(f"/api/v1/ingest/slurm/{query}", body, format="json")
        assert response.status_code == 403, query
    assert not Job.objects.exists() and not Node.objects.filter(hostname="gpu2").exists()
    # A node's token does not speak for a cluster's scheduler at all.
    assert node0.post("/api/v1/ingest/slurm/?cluster=c1", body, format="json").status_code == 403
    ok = relay.post("/api/v1/ingest/slurm/?cluster=c2", body, format="json")
    assert ok.status_code == 200 and Job.objects.get().cluster == other_cluster


def test_alertmanager_of_another_cluster_cannot_open_or_resolve_incidents(
    api, nodes, other_cluster, node0
):
    c2 = client_for("alertmanager-c2", "c2")
    fired = c2.post(ALERTMANAGER, webhook(alert("fp-a", node="gpu000")), format="json")
    assert fired.status_code == 200 and fired.json()["unrouted"] == 1
    assert not Incident.objects.exists()
    assert "token" in UnroutedAlert.objects.get(fingerprint="fp-a").reason
    # An incident c1's Alertmanager opened: c2's token resolves it under a c2 label — no.
    api("ada").post(ALERTMANAGER, webhook(alert("fp-b", node="gpu001")), format="json")
    incident = Incident.objects.get()
    resolved = alert("fp-b", status="resolved", ends="2026-11-28T03:40:00Z", cluster="c2")
    answer = c2.post(ALERTMANAGER, webhook(resolved), format="json")
    assert answer.status_code == 200 and answer.json()["resolved"] == 0
    incident.refresh_from_db()
    assert incident.status == "open"
    # Its own cluster's alerts are applied; a node's token may not post alerts at all.
    own = c2.post(ALERTMANAGER, webhook(alert("fp-c", node="x000")), format="json")
    assert own.json()["opened"] == 1
    assert node0.post(ALERTMANAGER, webhook(alert("fp-d")), format="json").status_code == 403


# --- Future stamps cannot freeze a GPU or a job ---------------------------------------------


def test_a_2099_sample_is_refused_and_the_real_one_is_applied(api, nodes):
    ada = api("ada")  # even a whole-fleet relay
    forged = ada.post(TELEMETRY, sweep("gpu003", 4, FUTURE, temp_c=40, xid=0), format="json")
    assert forged.status_code == 400
    assert list(forged.json()) == ["samples[0].ts"]
    real = ada.post(TELEMETRY, sweep("gpu003", 4, temp_c=95, xid=79), format="json")
    assert real.status_code == 202 and real.json()["applied"] == 1
    gpu = GPU.objects.get(node__hostname="gpu003", index=4)
    assert gpu.metrics == {"temp_c": 95, "xid": 79}
    # Within the 5-minute skew is a clock a little fast: accepted.
    slack = ada.post(TELEMETRY, sweep("gpu003", 4, now_iso(120), temp_c=90), format="json")
    assert slack.status_code == 202


def test_a_2099_step_cannot_freeze_a_jobs_hang_check(api, job):
    ada = api("ada")
    url = f"/api/v1/jobs/{job.pk}/metrics/"
    step = {"step": 10, "step_time_s": 1.0, "tokens_per_s": 9.0}
    forged = ada.post(url, {"samples": [{**step, "ts": FUTURE}]}, format="json")
    assert forged.status_code == 400 and list(forged.json()) == ["samples[0].ts"]
    assert not JobMetric.objects.exists()
    assert ada.post(url, {"samples": [{**step, "ts": now_iso()}]}, format="json").status_code == 202
    late = ada.post(
        f"/api/v1/jobs/{job.pk}/checkpoints/",
        {"step": 1, "saved_at": FUTURE, "blocking_s": 1},
        format="json",
    )
    assert late.status_code == 400 and list(late.json()) == ["saved_at"]
    job.refresh_from_db()
    assert job.last_checkpoint_at is None


def test_future_heartbeats_events_and_scrape_times_are_refused(api, nodes):
    ada = api("ada")
    beat = ada.post("/api/v1/nodes/gpu000/heartbeat/", {"ts": FUTURE}, format="json")
    assert beat.status_code == 400 and list(beat.json()) == ["ts"]
    assert Node.objects.get(hostname="gpu000").last_heartbeat_at is None
    event = {"node": "gpu000", "ts": FUTURE, "kind": "xid", "code": 79, "gpu": 0}
    refused = ada.post("/api/v1/ingest/events/", {"events": [event]}, format="json")
    assert refused.status_code == 400 and list(refused.json()) == ["events[0].ts"]
    scraped = ada.generic(
        "POST",
        f"/api/v1/ingest/prometheus/?node=gpu000&ts={FUTURE}",
        DCGM_SAMPLE.read_text(),
        content_type="text/plain",
    )
    assert scraped.status_code == 400 and list(scraped.json()) == ["ts"]
    assert not GPU.objects.filter(updated_at__isnull=False).exists()


# --- Agents never read ----------------------------------------------------------------------


def test_agents_writes_answer_no_object(api, job):
    ada = api("ada")
    empty = ada.patch(f"/api/v1/jobs/{job.pk}/", {}, format="json")
    assert empty.status_code == 200 and empty.json() == {"id": job.pk}
    renamed = ada.patch(f"/api/v1/jobs/{job.pk}/", {"status": "completed"}, format="json")
    assert renamed.json() == {"id": job.pk}
    body = {"name": "run-2", "cluster": "c1", "gpu_count": 8, "nodes": ["gpu004"]}
    created = ada.post("/api/v1/jobs/", body, format="json")
    assert created.status_code == 201 and created.json() == {"id": Job.objects.latest("id").pk}
    saved = {"step": 3, "saved_at": now_iso(-60), "blocking_s": 5, "size_bytes": 10}
    first = ada.post(f"/api/v1/jobs/{job.pk}/checkpoints/", saved, format="json")
    again = ada.post(f"/api/v1/jobs/{job.pk}/checkpoints/", {**saved, "step": 4}, format="json")
    assert (first.status_code, first.json()) == (201, {"accepted": 1})
    assert (again.status_code, again.json()) == (200, {"accepted": 1})
    # People still get the object back.
    otto = api("otto").patch(f"/api/v1/jobs/{job.pk}/", {}, format="json").json()
    assert otto["name"] == "llama-70b" and otto["nodes"] == [f"gpu00{i}" for i in range(4)]


# --- The scope: data, command, admin, and one place that checks it --------------------------


def test_create_user_scopes_an_agent_and_prints_the_token_last(cluster, nodes):
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "create_user",
        "n7",
        role="agent",
        cluster="c1",
        nodes="gpu[000-001]",
        stdout=out,
        stderr=err,
    )
    token = out.getvalue().strip().splitlines()[-1]
    assert "cluster c1, nodes gpu[000-001]" in err.getvalue()
    scope = AgentScope.objects.get(user__username="n7")
    assert scope.hostnames == ["gpu000", "gpu001"] and scope.cluster == cluster
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.post(TELEMETRY, sweep("gpu002", 0, temp_c=1), format="json").status_code == 403
    assert client.post(TELEMETRY, sweep("gpu001", 0, temp_c=1), format="json").status_code == 202
    # Re-issued without scope options, it keeps its scope; --fleet makes it a relay again.
    call_command("create_user", "n7", role="agent", stdout=io.StringIO(), stderr=io.StringIO())
    assert AgentScope.objects.filter(user__username="n7").exists()
    call_command(
        "create_user", "n7", role="agent", fleet=True, stdout=io.StringIO(), stderr=io.StringIO()
    )
    assert not AgentScope.objects.filter(user__username="n7").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"nodes": "gpu000"}, "--nodes needs --cluster"),
        ({"cluster": "nope"}, "unknown cluster"),
        ({"cluster": "c1", "nodes": "gpu[000"}, "hostlist"),
        ({"cluster": "c1", "role": "operator"}, "for --role agent"),
    ],
)
def test_create_user_refuses_a_bad_scope_and_leaves_no_unscoped_agent(cluster, options, message):
    options = {"role": "agent", **options}
    with pytest.raises(CommandError, match=message):
        call_command("create_user", "ghost", stdout=io.StringIO(), stderr=io.StringIO(), **options)
    assert not User.objects.filter(username="ghost").exists()


def test_a_scope_names_at_most_20000_nodes_and_only_hostnames():
    assert scope_hostnames("gpu[001-003],gpu010") == ["gpu001", "gpu002", "gpu003", "gpu010"]
    with pytest.raises(ValueError, match="20,000"):
        scope_hostnames(",".join(f"r{i}n[1-99999]" for i in range(50)))
    assert MAX_SCOPE_NODES == 20_000
    with pytest.raises(ValueError, match="is not a DNS name"):
        scope_hostnames("gpu/1")


def test_the_admin_shows_and_edits_the_scope(client, users, cluster, nodes):
    user = users["ada"]
    token_issue(user=user)
    client.force_login(users["root"])
    assert "whole fleet" in client.get("/admin/accounts/user/").content.decode()
    form = {
        "username": "ada",
        "role": "agent",
        "is_active": "on",
        "date_joined_0": "2026-11-01",
        "date_joined_1": "00:00:00",
        "agent_scope-TOTAL_FORMS": "1",
        "agent_scope-INITIAL_FORMS": "0",
        "agent_scope-MIN_NUM_FORMS": "0",
        "agent_scope-MAX_NUM_FORMS": "1",
        "agent_scope-0-cluster": str(cluster.pk),
        "agent_scope-0-hostlist": "gpu[000-003]",
    }
    url = f"/admin/accounts/user/{user.pk}/change/"
    bad = client.post(url, {**form, "agent_scope-0-hostlist": "gpu[000"})
    assert bad.status_code == 200 and not AgentScope.objects.exists()  # the form, with the error
    assert client.post(url, form).status_code == 302
    assert AgentScope.objects.get(user=user).hostnames == [f"gpu00{i}" for i in range(4)]
    listing = client.get("/admin/accounts/user/").content.decode()
    assert "cluster c1, nodes gpu[000-003]" in listing
    page = client.get(url).content.decode()
    assert "gpu[000-003]" in page and "4" in page
    tokens = client.get("/admin/accounts/apitoken/").content.decode()
    assert "cluster c1, nodes gpu[000-003]" in tokens


def _views() -> list[tuple[str, type]]:
    out = []

    def walk(resolver: URLResolver) -> None:
        for p in resolver.url_patterns:
            if isinstance(p, URLResolver):
                walk(p)
            elif isinstance(p, URLPattern):
                view = getattr(p.callback, "cls", None) or getattr(p.callback, "view_class", None)
                if view is not None:
                    out.append((str(p.name), view))

    walk(get_resolver())
    return out


def test_every_view_agents_may_write_to_checks_the_scope():
    writers = {
        name
        for name, view in _views()
        if any(Role.AGENT in roles for roles in getattr(view, "roles", {}).values())
    }
    assert "api-ingest-telemetry" in writers and "api-job-detail" in writers
    unchecked = {n for n, v in _views() if n in writers and not getattr(v, "agent_scoped", False)}
    assert unchecked == set()


def test_a_view_that_forgets_the_scope_refuses_scoped_tokens(cluster):
    class Forgetful:
        roles = {"POST": frozenset({Role.AGENT})}

    scoped = user_create_or_update(username="scoped", role=Role.AGENT)
    agent_scope_set(user=scoped, cluster="c1")
    relay = user_create_or_update(username="relay", role=Role.AGENT)
    allowed = {}
    for user in (scoped, relay):
        request = Request(APIRequestFactory().post("/x/"))
        request.user = user
        allowed[user.username] = RolePermission().has_permission(request, Forgetful())
    assert allowed == {"scoped": False, "relay": True}


def test_a_token_reads_its_scope_with_its_user(cluster, django_assert_num_queries):
    """The fleet lends accounts the scope's relations (apps/accounts/scoping.py), so token
    authentication reads them with the user and the checks cost no query."""
    agent = user_create_or_update(username="n8", role=Role.AGENT)
    agent_scope_set(user=agent, cluster="c1", hostlist="gpu000")
    user, _ = user_for_token(token_issue(user=agent))
    with django_assert_num_queries(0):
        scope = scope_of(user)
    assert scope is not None and scope.cluster_name == "c1"
    assert scope.hostnames == frozenset({"gpu000"})


# --- A refusal never says where something is, or whether it exists (issue 32) -------------


def _job_writes(pk: int) -> list[tuple[str, str, dict]]:
    base = f"/api/v1/jobs/{pk}"
    metrics = {"samples": [{"ts": now_iso(), "step": 1, "step_time_s": 1, "tokens_per_s": 9}]}
    return [
        ("post", f"{base}/metrics/", metrics),
        ("post", f"{base}/checkpoints/", {"step": 1, "saved_at": now_iso(), "blocking_s": 5}),
        ("post", f"{base}/preflight/", {}),
        ("post", f"{base}/ranks/", {"ranks": [{"rank": 0, "world_size": 1, "node": "gpu000"}]}),
        ("patch", f"{base}/", {"name": "pwned"}),
    ]


def _answers(client: APIClient, pk: int) -> list[tuple[int, str]]:
    out = []
    for method, url, body in _job_writes(pk):
        response = getattr(client, method)(url, body, format="json")
        out.append((response.status_code, response.json()["detail"].replace(str(pk), "ID")))
    return out


@pytest.mark.parametrize("who", ["relay-c2", "node-gpu005"])
def test_another_clusters_job_and_a_missing_job_answer_alike(job, other_cluster, who):
    """A scoped token learns nothing from a 403: another cluster's (or other nodes') job and
    a job that does not exist get the same answer, naming the job as given."""
    client = client_for(who, "c2") if who == "relay-c2" else client_for(who, "c1", "gpu005")
    missing = job.pk + 1000
    theirs, nothing = _answers(client, job.pk), _answers(client, missing)
    assert theirs == nothing
    for code, detail in theirs:
        assert code == 403
        assert detail == "job ID: outside this token's scope"
    job.refresh_from_db()
    assert job.name == "llama-70b" and not JobMetric.objects.exists()


def test_another_clusters_node_and_a_missing_node_answer_alike(nodes, other_cluster):
    relay = client_for("relay-c2", "c2")
    answers = []
    for host in ("gpu003", "nosuch9"):  # gpu003 is a node of c1; nosuch9 is nobody's
        telemetry = relay.post(TELEMETRY, sweep(host, 0, temp_c=1), format="json")
        beat = relay.post(f"/api/v1/nodes/{host}/heartbeat/", {}, format="json")
        admission = relay.get(f"/api/v1/nodes/{host}/admission/")
        answers.append(
            [
                (r.status_code, r.json()["detail"].replace(host, "HOST"))
                for r in (telemetry, beat, admission)
            ]
        )
    assert answers[0] == answers[1]
    for code, detail in answers[0]:
        assert code == 403 and "c1" not in detail and "cluster" not in detail
        assert detail == "node HOST: outside this token's scope"
