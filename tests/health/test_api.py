"""Health endpoints: run on demand, runs, results, pre-flight; roles."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Node
from apps.health.models import CheckResult, CheckRun
from apps.health.services import run_execute
from tests.fleet.test_agent_scope import client_for
from tests.health.conftest import backdate

pytestmark = pytest.mark.django_db


def test_run_on_demand_and_read_it_back(api, cluster, fleet, django_capture_on_commit_callbacks):
    backdate("h04", 500)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = api("otto").post(
            "/api/v1/health/run/", {"cluster": "c1", "checks": ["heartbeat"]}, format="json"
        )
    assert response.status_code == 202 and len(queued) == 1  # the task is sent on commit
    run_id = response.json()["run_id"]
    assert api("mia").get(f"/api/v1/health/runs/{run_id}/").json()["status"] == "queued"
    run_execute(run_id=run_id)  # what the worker does with it (a real worker: test_celery_worker)
    run = api("mia").get(f"/api/v1/health/runs/{run_id}/").json()
    assert (run["kind"], run["cluster"], run["status"]) == ("heartbeat", "c1", "done")
    assert run["counts"]["fail"] == 1 and run["duration_s"] is not None
    listed = api("mia").get("/api/v1/health/runs/?cluster=c1&kind=heartbeat").json()
    assert listed["count"] == 1
    failing = api("mia").get("/api/v1/health/results/?cluster=c1&status=fail").json()["results"]
    assert [(r["kind"], r["target"], r["status"]) for r in failing] == [
        ("heartbeat", "node:h04", "fail")
    ]


def test_run_request_validation_and_roles(api, cluster, fleet):
    assert (
        api("mia").post("/api/v1/health/run/", {"cluster": "c1"}, format="json").status_code == 403
    )
    bad = api("otto").post(
        "/api/v1/health/run/", {"cluster": "c1", "checks": ["vibes"]}, format="json"
    )
    assert bad.status_code == 400 and "checks" in bad.json()
    assert (
        api("otto").post("/api/v1/health/run/", {"cluster": "x"}, format="json").status_code == 400
    )
    assert CheckRun.objects.count() == 0


def test_preflight(api, cluster, fleet):
    job = fleet["job"]
    ok = api("ada").post(f"/api/v1/jobs/{job.pk}/preflight/", {}, format="json")
    assert ok.status_code == 200 and ok.json() == {"ok": True, "problems": []}
    api("otto").post(
        "/api/v1/nodes/h01/state/", {"state": "drained", "reason": "xid 79"}, format="json"
    )
    body = api("otto").post(f"/api/v1/jobs/{job.pk}/preflight/", {}, format="json").json()
    assert body == {"ok": False, "problems": [{"node": "h01", "reason": "state drained: xid 79"}]}
    assert (
        api("mia").post(f"/api/v1/jobs/{job.pk}/preflight/", {}, format="json").status_code == 403
    )


def test_an_agents_preflight_names_the_failing_nodes_not_their_states_or_evidence(
    api, cluster, fleet
):
    """issue 41 (docs/checks.md, `preflight`): an agent's preflight answered other nodes'
    states and the checks they failed (agents never read). It answers pass or fail and the
    names of the nodes that fail."""
    job = fleet["job"]
    url = f"/api/v1/jobs/{job.pk}/preflight/"
    drain = {"state": "drained", "reason": "xid 79"}
    api("otto").post("/api/v1/nodes/h01/state/", drain, format="json")
    h03 = Node.objects.get(hostname="h03")
    now = timezone.now()
    CheckResult.objects.create(
        cluster=cluster,
        kind="gpu_errors",
        target="gpu:h03/5",
        node=h03,
        status="fail",
        at=now,
        since=now,
        last_fail_at=now,
        message="XID 79 on GPU 5",
        details={"xid": 79},
    )
    full = api("otto").post(url, {}, format="json").json()
    assert full == {
        "ok": False,
        "problems": [
            {"node": "h01", "reason": "state drained: xid 79"},
            {"node": "h03", "reason": "failed the gpu_errors check in the last hour"},
        ],
    }
    assert api("root").post(url, {}, format="json").json() == full  # an admin is a person
    unscoped = api("ada")
    node_token = client_for("agent-h03", "c1", "h03")
    for agent in (unscoped, node_token):
        answer = agent.post(url, {}, format="json")
        assert answer.status_code == 200
        assert answer.json() == {"ok": False, "problems": [{"node": "h01"}, {"node": "h03"}]}
        text = answer.content.decode()
        assert not any(word in text for word in ("drained", "xid", "gpu_errors", "reason"))
    # The full answer is kept for people, as the job's preflight result.
    stored = CheckResult.objects.get(kind="preflight", target=f"job:{job.pk}")
    assert stored.details["problems"] == full["problems"]
    # A job that may start: the same answer for everyone.
    mended = {"state": "healthy", "reason": "fixed"}
    api("otto").post("/api/v1/nodes/h01/state/", mended, format="json")
    CheckResult.objects.filter(node=h03).delete()
    for client in (api("otto"), unscoped, node_token):
        assert client.post(url, {}, format="json").json() == {"ok": True, "problems": []}


def test_run_now_twenty_times_queues_each_kind_once(
    api, cluster, fleet, django_capture_on_commit_callbacks
):
    """Issue 32: twenty "run checks now" queued 120 runs. A kind already queued, not yet
    started, for the cluster is answered with that run and never queued again."""
    with django_capture_on_commit_callbacks(execute=False) as sent:
        first = api("otto").post("/api/v1/health/run/", {"cluster": "c1"}, format="json")
        again = [
            api("otto").post("/api/v1/health/run/", {"cluster": "c1"}, format="json")
            for _ in range(19)
        ]
    assert first.status_code == 202 and first.json()["already_queued"] == []
    kinds = CheckRun.objects.filter(cluster=cluster).values_list("kind", flat=True)
    assert sorted(kinds) == sorted(set(kinds)) and len(sent) == len(kinds)
    for answer in again:
        assert answer.status_code == 202
        assert answer.json()["run_ids"] == first.json()["run_ids"]
        assert answer.json()["already_queued"] == first.json()["run_ids"]
    # One kind asked again after its run started: a new run; the others still answered.
    run_execute(run_id=CheckRun.objects.get(kind="heartbeat").pk)
    mixed = (
        api("otto")
        .post(
            "/api/v1/health/run/",
            {"cluster": "c1", "checks": ["heartbeat", "thermal"]},
            format="json",
        )
        .json()
    )
    thermal = CheckRun.objects.get(kind="thermal").pk
    assert mixed["already_queued"] == [thermal] and mixed["run_ids"][1] == thermal
    assert mixed["run_id"] not in first.json()["run_ids"]
    assert CheckRun.objects.filter(kind="heartbeat").count() == 2


def test_a_run_queued_long_ago_is_not_the_answer(api, cluster, fleet):
    """A run left queued for longer than its schedule's interval (the broker lost it: a
    Redis restarted without its messages) does not stop run-now or the schedule."""
    old = (
        api("otto")
        .post("/api/v1/health/run/", {"cluster": "c1", "checks": ["thermal"]}, format="json")
        .json()["run_id"]
    )
    CheckRun.objects.filter(pk=old).update(queued_at=timezone.now() - dt.timedelta(seconds=121))
    new = (
        api("otto")
        .post("/api/v1/health/run/", {"cluster": "c1", "checks": ["thermal"]}, format="json")
        .json()
    )
    assert new["run_id"] != old and new["already_queued"] == []
