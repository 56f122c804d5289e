"""The demo's NIC ports (docs/simulator.md, The demo): `demo_setup` gives the NVIDIA
cluster's nodes their ports through the telemetry intake, the `fabric` check passes them on
its first runs, each live tick reads every port again with counters that never go down, and
a port fault the tick plays (a flap, a link that goes down) makes the check warn and fail."""

from __future__ import annotations

import datetime as dt
import io
import random

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.fleet.choices import NodeState
from apps.fleet.models import Cluster, Node
from apps.health.models import CheckResult, CheckRun
from apps.health.services import run_execute
from apps.simulator import demo
from apps.simulator.demo import DemoState, Fault, demo_tick, state_path
from apps.simulator.nics import FLAP_RECOVERIES, PORTS_PER_NODE
from apps.telemetry.models import Port

pytestmark = pytest.mark.django_db


def check(cluster: Cluster, at: dt.datetime) -> dict[str, int]:
    """One fabric run at `at`, as the worker runs it; its results' counts (those not 0)."""
    run = CheckRun.objects.create(cluster=cluster, kind="fabric", requested_by="test")
    done = run_execute(run_id=run.pk, now=at)
    assert done is not None and done.status == "done", done and done.error
    return {k: n for k, n in done.counts.items() if k in ("pass", "warn", "fail") and n}


def counters(cluster: Cluster) -> dict[tuple[str, str], dict[str, int]]:
    return {
        (host, device): c
        for host, device, c in Port.objects.filter(node__cluster=cluster).values_list(
            "node__hostname", "device", "counters"
        )
    }


def test_demo_ports_pass_then_a_tick_s_port_faults_warn_and_fail(settings, tmp_path, monkeypatch):  # noqa: ANN001
    settings.DEMO = True
    settings.VAR_DIR = tmp_path
    call_command("demo_setup", gpus=64, days=1, stdout=io.StringIO(), stderr=io.StringIO())
    sim, mtt = Cluster.objects.get(name="kuae-sim"), Cluster.objects.get(name="kuae-mtt")
    nodes = list(Node.objects.filter(cluster=sim))
    ports = list(Port.objects.filter(node__cluster=sim).select_related("node"))
    assert len(ports) == len(nodes) * PORTS_PER_NODE == 64
    assert {p.device for p in ports} == {f"mlx5_{i}" for i in range(PORTS_PER_NODE)}
    assert all(p.port == 1 and p.rate_gbps == 400 and p.state == "ACTIVE" for p in ports)
    assert all(p.switch == p.node.switch != "" for p in ports)  # cabled to the rack's leaf
    assert not Port.objects.filter(node__cluster=mtt).exists()

    now = timezone.now()
    assert check(sim, now) == {"pass": 64}  # first run: judged, nothing to compare yet
    monkeypatch.setattr(demo, "FAULT_CHANCE", 0)  # a quiet tick first
    before = counters(sim)
    reporting = Port.objects.filter(node__cluster=sim).exclude(node__state=NodeState.DOWN)
    counts = demo_tick(now=now + dt.timedelta(seconds=15), rng=random.Random(3))
    assert counts["ports"] == reporting.count() > 0
    after = counters(sim)
    for key, values in after.items():  # grew slowly, never down
        assert all(values[name] >= n for name, n in before[key].items()), key
    assert check(sim, now + dt.timedelta(seconds=20)) == {"pass": 64}

    # The tick's port faults, as `_maybe_fault` would have picked them.
    healthy = sorted(
        Node.objects.filter(cluster=sim, state=NodeState.HEALTHY).values_list("hostname", flat=True)
    )
    assert len(healthy) >= 2
    flapping, downed = healthy[0], healthy[1]
    until = (now + dt.timedelta(minutes=5)).isoformat()
    state = DemoState.load(state_path())
    state.faults = [Fault("flap", flapping, 2, until), Fault("linkdown", downed, 5, until)]
    state.save(state_path())
    demo_tick(now=now + dt.timedelta(seconds=30), rng=random.Random(4))
    port = Port.objects.get(node__hostname=downed, device="mlx5_5")
    assert (port.state, port.counters["link_downed"]) == ("DOWN", 1)
    flap = Port.objects.get(node__hostname=flapping, device="mlx5_2")
    assert flap.counters["link_error_recovery"] == FLAP_RECOVERIES
    assert check(sim, now + dt.timedelta(seconds=35)) == {"pass": 62, "warn": 1, "fail": 1}
    failed = CheckResult.objects.get(kind="fabric", status="fail")
    assert failed.target == f"port:{downed}/mlx5_5/1" and "now DOWN" in failed.message
    warned = CheckResult.objects.get(kind="fabric", status="warn")
    assert warned.target == f"port:{flapping}/mlx5_2/1" and "link error" in warned.message

    # Still down on the next tick: counted once, not again.
    demo_tick(now=now + dt.timedelta(seconds=45), rng=random.Random(5))
    port.refresh_from_db()
    assert (port.state, port.counters["link_downed"]) == ("DOWN", 1)
