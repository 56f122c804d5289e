"""The `storage` check end to end (docs/checks.md, `storage`): an admin sets the cluster's
required mounts (an operator may not), nodes post their filesystems to the telemetry intake,
and the runs, executed as the worker executes them, store results, open incidents and drain
nodes: a read-only checkpoint mount drains its node with one sev2 `storage` incident on its
job; one export broken on most of its nodes is one incident for the storage that drains
none; a node that never reported filesystems is not judged; a cluster without required
mounts is not monitored."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Node
from apps.health.checks import CHECKS
from apps.health.models import CheckResult, CheckRun
from apps.health.services import run_execute
from apps.incidents.models import Incident

pytestmark = pytest.mark.django_db

T0 = timezone.now().replace(microsecond=0) - dt.timedelta(minutes=30)
MINUTE = dt.timedelta(minutes=1)
TIB = 2**40
EXPORT = "nas01:/export/ckpt"


def mount(**changed: object) -> dict[str, object]:
    return {
        "device": EXPORT,
        "fstype": "nfs4",
        "readonly": 0,
        "size_bytes": 100 * TIB,
        "avail_bytes": 40 * TIB,
        "device_error": 0,
        **changed,
    }


def send(client, at: dt.datetime, readings: dict[str, dict[str, dict[str, object]]]) -> None:  # noqa: ANN001
    """Post each node's filesystems ({node: {mount point: values}}) at `at`."""
    body = {
        "host": [
            {
                "node": host,
                "kind": "filesystem",
                "subject": point,
                "ts": at.isoformat(),
                "values": values,
            }
            for host, points in readings.items()
            for point, values in points.items()
        ]
    }
    response = client.post("/api/v1/ingest/telemetry/", body, format="json")
    assert response.status_code == 202, response.content


def check(cluster, at: dt.datetime) -> dict[str, int]:  # noqa: ANN001
    """One storage run at `at`, as the worker runs it; its counts."""
    run = CheckRun.objects.create(cluster=cluster, kind="storage", requested_by="test")
    done = run_execute(run_id=run.pk, now=at)
    assert done is not None and done.status == "done", done and done.error
    return done.counts


def state(host: str) -> str:
    return Node.objects.get(hostname=host).state


def result(host: str, point: str = "/checkpoints") -> CheckResult:
    return CheckResult.objects.get(kind="storage", target=f"mount:{host}:{point}")


def require(api, mounts: object) -> object:  # noqa: ANN001
    response = api("root").patch("/api/v1/clusters/c1/", {"required_mounts": mounts}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["required_mounts"]


def fresh(cluster):  # noqa: ANN001, ANN201
    cluster.refresh_from_db()
    return cluster


def test_admins_set_required_mounts_validated_operators_may_not(api, cluster):
    assert api("root").get("/api/v1/clusters/c1/").json()["required_mounts"] == []
    refused = api("otto").patch(
        "/api/v1/clusters/c1/", {"required_mounts": ["/checkpoints"]}, format="json"
    )
    assert refused.status_code == 403
    assert require(api, ["/checkpoints/", "/scratch"]) == ["/checkpoints", "/scratch"]
    cluster.refresh_from_db()
    assert cluster.required_mounts == ["/checkpoints", "/scratch"]
    for bad, words in (
        (["/checkpoints", "scratch"], "required_mounts[1]: must be an absolute path"),
        (["/a", "/b", "/a/"], "required_mounts[2]: /a is listed twice"),
        (["/" + "x" * 255], "required_mounts[0]: must be at most 255 characters"),
        ([f"/m{i}" for i in range(33)], "at most 32 mount points"),
        ("/checkpoints", "must be a list"),
    ):
        response = api("root").patch(
            "/api/v1/clusters/c1/", {"required_mounts": bad}, format="json"
        )
        assert response.status_code == 400, bad
        assert words in response.json()["required_mounts"][0], response.json()
    cluster.refresh_from_db()
    assert cluster.required_mounts == ["/checkpoints", "/scratch"]  # refused whole
    assert require(api, []) == []


def test_a_read_only_mount_drains_its_node_with_one_incident_on_its_job(api, cluster, nodes, job):
    ada = api("ada")
    assert CHECKS["storage"].not_monitored(fresh(cluster)) == "no required mounts"
    send(
        ada,
        T0,
        {n.hostname: {"/checkpoints": mount(), "/": mount(device="/dev/sda1")} for n in nodes[:6]},
    )
    assert check(cluster, T0) == {
        "pass": 0,
        "warn": 0,
        "fail": 0,
        "incidents_opened": 0,
        "incidents_resolved": 0,
        "nodes_changed": 0,
    }  # no required mounts: nothing judged
    require(api, ["/checkpoints"])
    assert CHECKS["storage"].not_monitored(fresh(cluster)) is None
    counts = check(cluster, T0 + MINUTE)
    # gpu006 and gpu007 never reported filesystems: not judged
    assert (counts["pass"], counts["fail"], counts["incidents_opened"]) == (6, 0, 0)
    assert not CheckResult.objects.filter(kind="storage", node__hostname="gpu006").exists()
    assert result("gpu000").message == "/checkpoints writable, at least 5% free"

    at = T0 + 2 * MINUTE
    readings = {
        n.hostname: {"/checkpoints": mount(), "/": mount(device="/dev/sda1")} for n in nodes[:6]
    }
    readings["gpu001"]["/checkpoints"] = mount(readonly=1)
    readings["gpu005"]["/checkpoints"] = mount(avail_bytes=2 * TIB)  # 2% free
    del readings["gpu004"]["/checkpoints"]  # unmounted: the agent no longer sends it
    send(ada, at, readings)
    counts = check(cluster, at + MINUTE)
    assert (counts["fail"], counts["warn"], counts["pass"]) == (2, 1, 3)
    assert result("gpu001").status == "fail" and "read-only" in result("gpu001").message
    assert result("gpu004").status == "fail" and "not mounted" in result("gpu004").message
    assert result("gpu005").status == "warn" and "2.0% < 5%" in result("gpu005").message
    on_job = Incident.objects.get(category="storage", job=job)
    assert on_job.severity == "sev2" and on_job.interrupts_job
    assert {n.hostname for n in on_job.nodes.all()} == {"gpu001"}
    assert "mount /checkpoints" in on_job.title
    off_job = Incident.objects.get(category="storage", nodes__hostname="gpu004")
    assert off_job.severity == "sev2" and off_job.job is None
    low = Incident.objects.get(category="storage", nodes__hostname="gpu005")
    assert low.severity == "sev3"
    # two fails on two of eight nodes: drained within the cap of one an hour at 2% (the
    # cluster of 8 nodes drains at most max(1, 0.16) = 1)
    drained = {h for h in ("gpu001", "gpu004") if state(h) == "drained"}
    assert len(drained) == 1 and state("gpu005") == "healthy"
    # the next run updates, never piles up
    check(cluster, at + 2 * MINUTE)
    assert Incident.objects.filter(category="storage").count() == 3


def test_one_export_broken_on_its_nodes_is_one_storage_incident_and_drains_none(
    api, cluster, nodes, job
):
    require(api, ["/checkpoints"])
    ada = api("ada")
    fine = {n.hostname: {"/checkpoints": mount()} for n in nodes[:4]}
    fine.update(
        {n.hostname: {"/checkpoints": mount(device="nas02:/export/ckpt")} for n in nodes[4:]}
    )
    send(ada, T0, fine)
    assert check(cluster, T0)["pass"] == 8
    broken = dict(fine)
    broken.update({n.hostname: {"/checkpoints": mount(readonly=1)} for n in nodes[:4]})
    send(ada, T0 + MINUTE, broken)
    counts = check(cluster, T0 + 2 * MINUTE)
    assert (counts["fail"], counts["pass"], counts["nodes_changed"]) == (4, 4, 0)
    incident = Incident.objects.get(category="storage")
    assert incident.details["component"] == f"storage:{EXPORT}"
    assert incident.details["failing_nodes"] == ["gpu000", "gpu001", "gpu002", "gpu003"]
    assert incident.details["component_nodes"] == 4
    assert {n.hostname for n in incident.nodes.all()} == {f"gpu00{i}" for i in range(4)}
    assert "the storage, not each node" in incident.description
    assert all(state(f"gpu00{i}") == "healthy" for i in range(8))
    check(cluster, T0 + 3 * MINUTE)  # still broken: the same incident, still no drain
    assert Incident.objects.filter(category="storage").count() == 1
    assert all(state(f"gpu00{i}") == "healthy" for i in range(8))


def test_two_nodes_of_an_export_are_no_blast_and_a_cluster_never_reporting_is_not_monitored(
    api, cluster, nodes
):
    require(api, ["/checkpoints"])
    assert CHECKS["storage"].not_monitored(fresh(cluster)) == (
        "no node of this cluster has reported its filesystems"
    )
    ada = api("ada")
    send(ada, T0, {n.hostname: {"/checkpoints": mount()} for n in nodes})
    broken = {
        n.hostname: {"/checkpoints": mount(readonly=int(n.hostname < "gpu002"))} for n in nodes
    }
    send(ada, T0 + MINUTE, broken)
    counts = check(cluster, T0 + 2 * MINUTE)
    assert counts["fail"] == 2
    assert not Incident.objects.filter(details__component__startswith="storage:").exists()
    assert Incident.objects.filter(category="storage").count() == 2  # one per node
