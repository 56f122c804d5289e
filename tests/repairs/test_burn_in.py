"""Return to service (docs/repairs.md): burn-in keeps the node out until a probe newer than the
request passes the slow-node and checksum comparisons with no new XID or ECC event; then it
is healthy (the one automatic improvement) and the repair closes."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster, Node, NodeStateChange
from apps.health.detectors import GpuLatest
from apps.health.limits import limits_from
from apps.repairs.burn_in import SinceEvent, judge
from apps.repairs.models import Repair
from apps.repairs.services import burn_ins_evaluate, repairs_tick
from tests.repairs.conftest import drain, probe, xid

NOW = dt.datetime(2025, 3, 1, 12, tzinfo=dt.UTC)
LIMITS = limits_from({})


def _gpus(host: str, n: int = 8, *, at: dt.datetime, tflops: float = 900, checksum: float = 7.5):
    return [
        GpuLatest(host, i, "H100", {"gemm_tflops": tflops, "gemm_checksum": checksum}, at, at)
        for i in range(n)
    ]


def test_judge_waits_for_a_probe_newer_than_the_request():
    old = _gpus("a", at=NOW - dt.timedelta(minutes=1))
    assert (
        judge(hostname="a", requested_at=NOW, gpus=old, events=[], limits=LIMITS).outcome == "wait"
    )
    fresh = _gpus("a", at=NOW + dt.timedelta(minutes=1))
    verdict = judge(hostname="a", requested_at=NOW, gpus=fresh, events=[], limits=LIMITS)
    assert verdict.outcome == "pass", verdict.note


def test_judge_fails_a_slow_gpu_a_wrong_checksum_or_an_event():
    at = NOW + dt.timedelta(minutes=1)
    peers = _gpus("b", at=at) + _gpus("c", at=at) + _gpus("d", at=at)  # 3 voters besides a
    slow = [
        *peers,
        *_gpus("a", 7, at=at),
        GpuLatest("a", 7, "H100", {"gemm_tflops": 500, "gemm_checksum": 7.5}, at, at),
    ]
    verdict = judge(hostname="a", requested_at=NOW, gpus=slow, events=[], limits=LIMITS)
    assert verdict.outcome == "fail" and "GPU 7" in verdict.note
    wrong = [
        *peers,
        *_gpus("a", 7, at=at),
        GpuLatest("a", 7, "H100", {"gemm_tflops": 900, "gemm_checksum": 8.5}, at, at),
    ]
    assert (
        judge(hostname="a", requested_at=NOW, gpus=wrong, events=[], limits=LIMITS).outcome
        == "fail"
    )
    event = SinceEvent(3, "xid", 79, at)
    verdict = judge(
        hostname="a", requested_at=NOW, gpus=_gpus("a", at=at), events=[event], limits=LIMITS
    )
    assert verdict.outcome == "fail" and "XID 79 on GPU 3" in verdict.note


@pytest.mark.django_db
def test_node_stays_out_until_a_fresh_passing_probe_then_healthy_and_closed(fleet):
    agent = fleet["agent"]
    probe(agent, "n01", shift_s=-60)  # a probe from before the failure does not count
    drain("n01")
    response = fleet["otto"].post("/api/v1/nodes/n01/return/", {}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "burn_in"
    repairs_tick()
    repair = Repair.objects.get()
    assert Node.objects.get(hostname="n01").state == "drained" and repair.status == "burn_in"
    assert "waiting for a GEMM probe" in repair.burn_in_note
    probe(agent, "n01", gpus=5)  # not every GPU yet
    repairs_tick()
    assert Node.objects.get(hostname="n01").state == "drained"
    assert "5 of 8" in Repair.objects.get().burn_in_note
    probe(agent, "n01")
    assert repairs_tick()["pass"] == 1
    node = Node.objects.get(hostname="n01")
    repair = Repair.objects.get()
    assert node.state == "healthy" and repair.status == "closed" and repair.closed_how == "burn_in"
    change = NodeStateChange.objects.filter(node=node).order_by("-at", "-id").first()
    assert (change.source, change.state) == ("repair", "healthy")
    assert repair.closed_at == change.at


@pytest.mark.django_db
def test_a_failing_probe_keeps_it_out_and_says_why(fleet):
    drain("n01")
    fleet["otto"].post("/api/v1/nodes/n01/return/", {}, format="json")
    for peer in ("n00", "n02", "n03"):  # the checksum vote needs 3 nodes besides n01's own
        probe(fleet["agent"], peer)
    probe(fleet["agent"], "n01", odd_gpu=2, odd_checksum=9999.0)
    assert burn_ins_evaluate()["fail"] == 1
    repair = Repair.objects.get()
    assert Node.objects.get(hostname="n01").state == "drained"
    assert (
        repair.status == "open"
        and "GPU 2" in repair.burn_in_note
        and "failed" in repair.burn_in_note
    )
    # worked on again, returned again, a passing probe: back in service
    fleet["otto"].post("/api/v1/nodes/n01/return/", {}, format="json")
    probe(fleet["agent"], "n01")
    burn_ins_evaluate()
    assert Node.objects.get(hostname="n01").state == "healthy"
    assert Repair.objects.get().status == "closed"


@pytest.mark.django_db
def test_a_slow_probe_keeps_it_out(fleet):
    for host in ("n02", "n03"):
        probe(fleet["agent"], host)
    drain("n01")
    fleet["otto"].post("/api/v1/nodes/n01/return/", {}, format="json")
    probe(fleet["agent"], "n01", odd_gpu=5, odd_tflops=400.0)
    burn_ins_evaluate()
    assert Node.objects.get(hostname="n01").state == "drained"
    assert "GPU 5" in Repair.objects.get().burn_in_note


@pytest.mark.django_db
def test_a_new_xid_since_the_return_keeps_it_out(fleet):
    drain("n01")
    fleet["otto"].post("/api/v1/nodes/n01/return/", {}, format="json")
    xid(fleet["agent"], "n01", 79, gpu=3)
    probe(fleet["agent"], "n01")
    burn_ins_evaluate()
    repair = Repair.objects.get()
    assert Node.objects.get(hostname="n01").state == "drained" and repair.status == "open"
    assert "XID 79 on GPU 3" in repair.burn_in_note


@pytest.mark.django_db
def test_paused_automation_holds_the_return(fleet):
    drain("n01")
    fleet["otto"].post("/api/v1/nodes/n01/return/", {}, format="json")
    Cluster.objects.update(automation_paused=True)
    probe(fleet["agent"], "n01")
    burn_ins_evaluate()
    assert Node.objects.get(hostname="n01").state == "drained"
    assert "paused" in Repair.objects.get().burn_in_note
    Cluster.objects.update(automation_paused=False)
    burn_ins_evaluate()
    assert Node.objects.get(hostname="n01").state == "healthy"


@pytest.mark.django_db
def test_skip_burn_in_returns_it_at_once_recorded_as_such(fleet):
    drain("n01")
    response = fleet["erin"].post("/api/v1/nodes/n01/return/?skip_burn_in=1", {}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "closed" and body["skip_burn_in"] and body["closed_how"] == "skipped"
    assert body["return_requested_by"] == "erin"
    assert Node.objects.get(hostname="n01").state == "healthy"


@pytest.mark.django_db
def test_the_checks_never_return_a_node_only_the_repair_does(fleet, cluster):
    """The health checks' passes leave a drained node drained (outcomes never improve a
    state); the healthy state comes from the repair (source `repair`)."""
    from apps.health.services import runs_execute_now

    drain("n01")
    fleet["otto"].post("/api/v1/nodes/n01/return/", {}, format="json")
    probe(fleet["agent"], "n01")
    runs_execute_now(cluster=cluster, kinds=["slow_node", "sdc"], requested_by="test")
    assert Node.objects.get(hostname="n01").state == "drained"
    burn_ins_evaluate(now=timezone.now())
    assert Node.objects.get(hostname="n01").state == "healthy"
