"""The checks skip a window's nodes — no warn or fail, no incident, no state change — and
only those (docs/maintenance.md)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Node, NodeStateChange
from apps.health.models import CheckResult
from apps.health.services import runs_execute_now
from apps.incidents.models import Incident
from apps.jobs.models import JobMetric
from tests.maintenance.conftest import book

pytestmark = pytest.mark.django_db


def check(cluster, kind):  # noqa: ANN001, ANN201
    (run,) = runs_execute_now(cluster=cluster, kinds=[kind], requested_by="test")
    assert run.status == "done", run.error
    return run


def failing(kind: str) -> set[str]:
    rows = CheckResult.objects.filter(kind=kind).exclude(status="pass")
    return set(rows.values_list("target", flat=True))


def silent(*hosts: str) -> None:
    when = timezone.now() - dt.timedelta(seconds=600)
    Node.objects.filter(hostname__in=hosts).update(last_seen_at=when, last_heartbeat_at=when)


def telemetry(agent, host: str, gpu: int, **metrics):  # noqa: ANN001, ANN201
    ts = timezone.now().isoformat().replace("+00:00", "Z")
    samples = [
        {"node": host, "gpu": i, "ts": ts, "metrics": metrics if i == gpu else {"gpu_util": 0}}
        for i in range(8)
    ]
    r = agent.post("/api/v1/ingest/telemetry/", {"samples": samples}, format="json")
    assert r.status_code == 202


def user_changes() -> set[str]:
    return set(
        NodeStateChange.objects.exclude(source__in=("maintenance", "import"))
        .exclude(reason="registered")
        .values_list("node__hostname", flat=True)
    )


def test_heartbeat_skips_exactly_the_window_s_nodes(cluster, fleet):
    book(cluster, "n[00-01]")
    # A person moved n01 out of maintenance meanwhile: still in the window, still skipped.
    Node.objects.filter(hostname="n01").update(state="healthy")
    silent("n00", "n01", "n05")
    run = check(cluster, "heartbeat")
    assert failing("heartbeat") == {"node:n05"}  # the one silent node outside the window
    assert not CheckResult.objects.filter(target__in=("node:n00", "node:n01")).exists()
    assert run.counts["fail"] == 1 and run.counts["pass"] == 9
    incident = Incident.objects.exclude(planned=True).get()
    assert list(incident.nodes.values_list("hostname", flat=True)) == ["n05"]
    assert Node.objects.get(hostname="n05").state == "down"
    assert Node.objects.get(hostname="n00").state == "maintenance"


def test_window_nodes_do_not_count_towards_a_monitoring_path_outage(cluster, fleet):
    book(cluster, "n[00-03]")  # 4 of 12 silent would be past 10%: the monitoring path
    silent("n00", "n01", "n02", "n03")
    check(cluster, "heartbeat")
    assert failing("heartbeat") == set()
    assert not Incident.objects.filter(planned=False).exists()


def test_gpu_errors_skip_the_window_s_nodes_only(cluster, fleet):
    agent = fleet["agent"]
    for host in ("n02", "n09", "n10"):
        telemetry(agent, host, 1, xid=0, ecc_dbe_total=0)
    check(cluster, "gpu_errors")
    book(cluster, "n[09-10]")
    telemetry(agent, "n09", 1, xid=79)  # fallen off the bus
    telemetry(agent, "n10", 1, ecc_dbe_total=4)
    telemetry(agent, "n02", 1, ecc_dbe_total=4)
    check(cluster, "gpu_errors")
    assert failing("gpu_errors") == {"gpu:n02/1"}
    assert set(Incident.objects.values_list("category", "planned")) == {
        ("gpu_hbm", False),
    }
    assert {
        n.hostname: n.state for n in Node.objects.filter(hostname__in=("n02", "n09", "n10"))
    } == {
        "n02": "drained",
        "n09": "maintenance",
        "n10": "maintenance",
    }


def test_thermal_skips_the_window_s_nodes_only(cluster, fleet):
    agent = fleet["agent"]
    book(cluster, "n07")
    for _ in range(3):
        telemetry(agent, "n07", 0, temp_c=97)
        telemetry(agent, "n08", 0, temp_c=97)
        check(cluster, "thermal")
    assert failing("thermal") == {"gpu:n08/0"}
    assert not CheckResult.objects.filter(kind="thermal", node__hostname="n07").exists()
    (incident,) = Incident.objects.all()
    assert list(incident.nodes.values_list("hostname", flat=True)) == ["n08"]


def test_a_hang_of_a_job_the_window_stopped_is_no_finding(cluster, fleet):
    job = fleet["job"]
    JobMetric.objects.create(
        job=job,
        ts=timezone.now() - dt.timedelta(hours=1),
        step=10,
        step_time_s=1.0,
        tokens_per_s=1.0,
    )
    book(cluster, "n02")  # one of the job's nodes: the job stops (a planned interruption)
    check(cluster, "job_hang")
    assert failing("job_hang") == set()
    assert list(Incident.objects.values_list("category", "planned")) == [("host_maintenance", True)]


def test_after_the_window_the_checks_see_the_nodes_again(cluster, fleet, api):
    window = book(cluster, "n06")
    assert api("otto").delete(f"/api/v1/maintenance/{window.pk}/").status_code == 200
    silent("n06")
    check(cluster, "heartbeat")
    assert failing("heartbeat") == {"node:n06"}


def test_without_a_window_the_same_hang_fires(cluster, fleet):
    book(cluster, "n09")  # a window on a node the job does not use changes nothing for it
    check(cluster, "job_hang")
    assert failing("job_hang") == {f"job:{fleet['job'].pk}"}
