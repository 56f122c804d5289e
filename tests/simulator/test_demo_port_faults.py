"""The live demo raises a NIC port fault on a seeded schedule (docs/simulator.md, The demo):
the first 2–4 minutes after its first tick, each next one 15–30 minutes after the last, a
flapping link or a link that goes down on a healthy node's port; the same cluster draws the
same schedule every time, and the tick plays the fault on the port."""

from __future__ import annotations

import datetime as dt
import io
import random

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.fleet.models import Cluster
from apps.simulator import demo
from apps.simulator.demo import PORT_FAULTS, DemoState, demo_tick, port_fault_due, state_path
from apps.simulator.nics import FLAP_RECOVERIES, device
from apps.telemetry.models import Port

pytestmark = pytest.mark.django_db
TICK = dt.timedelta(seconds=15)


def _schedule(cluster: Cluster, start: dt.datetime, minutes: int) -> list[tuple]:
    """The port faults raised over `minutes` of 15-second ticks: (minutes in, kind, host, port)."""
    state = DemoState()
    out = []
    t = start
    while t <= start + dt.timedelta(minutes=minutes):
        fault = port_fault_due(cluster, state, t)
        if fault is not None:
            out.append(((t - start).total_seconds() / 60, fault.kind, fault.hostname, fault.gpu))
        t += TICK
    return out


def test_port_faults_come_soon_then_every_15_to_30_minutes(settings, tmp_path, monkeypatch):  # noqa: ANN001
    settings.DEMO = True
    settings.VAR_DIR = tmp_path
    call_command("demo_setup", gpus=64, days=1, stdout=io.StringIO(), stderr=io.StringIO())
    sim, mtt = Cluster.objects.get(name="kuae-sim"), Cluster.objects.get(name="kuae-mtt")
    start = timezone.now()
    faults = _schedule(sim, start, 90)
    assert 2 <= faults[0][0] <= 4.25, faults  # soon after `make run`
    gaps = [b[0] - a[0] for a, b in zip(faults, faults[1:], strict=False)]
    assert len(faults) >= 3 and all(15 <= gap <= 30.25 for gap in gaps), faults
    assert {kind for _, kind, *_ in faults} <= set(PORT_FAULTS)
    ports = set(Port.objects.filter(node__cluster=sim).values_list("node__hostname", "device"))
    assert all((host, device(i)) in ports for *_, host, i in faults)
    assert _schedule(sim, start, 90) == faults  # seeded: the same every time
    assert _schedule(mtt, start, 90) == []  # no ports, no port fault

    # The live tick plays it: the first tick schedules it, the tick when it is due raises it.
    monkeypatch.setattr(demo, "FAULT_CHANCE", 0)  # no node or GPU fault beside it
    demo_tick(now=start, rng=random.Random(1))
    due = dt.datetime.fromisoformat(str(DemoState.load(state_path()).ports["kuae-sim"][0]))
    assert start + dt.timedelta(minutes=2) <= due <= start + dt.timedelta(minutes=4)
    demo_tick(now=due, rng=random.Random(2))
    (raised,) = DemoState.load(state_path()).faults
    _, kind, host, index = faults[0]
    assert (raised.kind, raised.hostname, raised.gpu) == (kind, host, index)
    port = Port.objects.get(node__hostname=host, device=device(index))
    if kind == "linkdown":
        assert (port.state, port.counters["link_downed"]) == ("DOWN", 1)
    else:
        assert port.counters["link_error_recovery"] >= FLAP_RECOVERIES
