"""Pausing automation (docs/on-call.md): checks run, store results and open incidents, but
change no node state and send nothing to the scheduler; every page shows the pause."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.fleet.services import cluster_automation_set, node_set_state
from apps.health.models import CheckResult
from apps.health.services import runs_execute_now
from apps.incidents.models import Incident
from apps.scheduler.models import Actuation


def _silent(nodes: list[Node]) -> None:
    """gpu000 stopped sending heartbeats 20 minutes ago; the others are fresh."""
    now = timezone.now()
    Node.objects.filter(pk__in=[n.pk for n in nodes]).update(
        last_heartbeat_at=now, last_seen_at=now
    )
    Node.objects.filter(pk=nodes[0].pk).update(
        last_heartbeat_at=now - dt.timedelta(minutes=20),
        last_seen_at=now - dt.timedelta(minutes=20),
    )


def test_paused_checks_open_incidents_but_change_no_state(
    cluster: Cluster, nodes: list[Node]
) -> None:
    _silent(nodes)
    cluster_automation_set(cluster=cluster, paused=True, reason="monitoring path outage", by="otto")
    runs_execute_now(cluster=cluster, kinds=["heartbeat"], requested_by="test")
    assert CheckResult.objects.get(kind="heartbeat", target="node:gpu000").status == "fail"
    assert Incident.objects.filter(nodes__hostname="gpu000", status="open").exists()
    assert Node.objects.get(hostname="gpu000").state == "healthy"  # held

    cluster_automation_set(cluster=cluster, paused=False, reason="", by="otto")
    runs_execute_now(cluster=cluster, kinds=["heartbeat"], requested_by="test")
    assert Node.objects.get(hostname="gpu000").state == "down"


def test_paused_sends_nothing_to_the_scheduler(cluster: Cluster, nodes: list[Node]) -> None:
    Cluster.objects.filter(pk=cluster.pk).update(actuation="on")
    cluster.refresh_from_db()
    cluster_automation_set(cluster=cluster, paused=True, reason="Slurm upgrade", by="otto")
    node_set_state(node=nodes[1], state="drained", reason="by hand", source="user", by="otto")
    (row,) = Actuation.objects.all()
    assert row.result == "skipped" and row.error == "automation paused by otto: Slurm upgrade"


def test_pause_api_and_banner(api, client, users, cluster: Cluster, nodes: list[Node]) -> None:  # noqa: ANN001
    r = api("otto").post(
        "/api/v1/clusters/c1/automation/", {"paused": True, "reason": "storm"}, format="json"
    )
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["automation_paused"] is True and body["automation_by"] == "otto"
    assert body["automation_reason"] == "storm" and body["automation_at"]
    assert (
        api("mia")
        .post("/api/v1/clusters/c1/automation/", {"paused": False}, format="json")
        .status_code
        == 403
    )
    r = api("otto").post("/api/v1/clusters/c1/automation/", {"paused": True}, format="json")
    assert r.status_code == 400 and "reason" in r.json()

    client.force_login(users["mia"])
    for url in ("/", "/nodes/", "/nodes/gpu000/", "/incidents/", "/health/"):
        page = client.get(url).content.decode()
        assert "Automation paused on c1" in page and "by otto" in page and "storm" in page, url
    api("otto").post("/api/v1/clusters/c1/automation/", {"paused": False}, format="json")
    assert "Automation paused" not in client.get("/").content.decode()


def test_pause_from_the_overview(client, users, cluster: Cluster, nodes: list[Node]) -> None:  # noqa: ANN001
    client.force_login(users["otto"])
    page = client.get("/?cluster=c1").content.decode()
    assert "Pause automation" in page
    r = client.post("/clusters/c1/automation/", {"paused": "true", "reason": ""})
    assert r.status_code == 302
    assert not Cluster.objects.get(pk=cluster.pk).automation_paused  # a pause needs a reason
    client.post("/clusters/c1/automation/", {"paused": "true", "reason": "switch firmware"})
    cluster.refresh_from_db()
    assert cluster.automation_paused and cluster.automation_by == "otto"
    assert "Resume automation" in client.get("/?cluster=c1").content.decode()
    client.post("/clusters/c1/automation/", {"paused": "false"})
    assert not Cluster.objects.get(pk=cluster.pk).automation_paused
    client.force_login(users["mia"])
    assert "Pause automation" not in client.get("/?cluster=c1").content.decode()
    assert (
        client.post("/clusters/c1/automation/", {"paused": "true", "reason": "x"}).status_code
        == 403
    )
