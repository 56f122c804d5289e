"""The simulator's host readings (docs/simulator.md, Host readings): every node reports its
memory controllers, the cluster's mounts, its GPUs' and NICs' PCIe devices and its clock,
each reading what the kinds declare and the intake would accept, the same for a seed; the
live demo advances them every tick and raises a host fault on a seeded schedule, each kind
of `HOST_FAULTS` changing the reading its row says."""

from __future__ import annotations

import datetime as dt
import io
import random

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.simulator import demo
from apps.simulator.demo import DemoState, demo_tick, host_fault_due, state_path
from apps.simulator.host import (
    CE_BURST,
    CHECKPOINTS,
    HOST_FAULTS,
    LANES,
    MEMORY_CONTROLLERS,
    MOUNTS,
    OOM_KILLS,
    TRAINED_DOWN_WIDTH,
    Placed,
    checkpoints_avail,
    gpu_address,
    host_readings,
    nic_address,
)
from apps.telemetry.host import parse_host_batch
from apps.telemetry.host_kinds import HOST_KINDS
from apps.telemetry.models import HostReading
from apps.telemetry.services import host_ingest

pytestmark = pytest.mark.django_db
TICK = dt.timedelta(seconds=15)


def simulate(gpus: int = 64, seed: int = 1, cluster: str = "kuae-sim", prefix: str = "") -> None:
    call_command(
        "simulate",
        gpus=gpus,
        days=1,
        seed=seed,
        cluster=cluster,
        host_prefix=prefix,
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )


def _values(cluster: str = "kuae-sim") -> dict[tuple[str, str, str], dict]:
    rows = HostReading.objects.filter(node__cluster__name=cluster)
    return {
        (h, k, s): v
        for h, k, s, v in rows.values_list("node__hostname", "kind", "subject", "values")
    }


def test_every_node_reports_every_kind_as_declared():
    simulate()
    nodes = list(Node.objects.values_list("hostname", flat=True))
    readings = list(HostReading.objects.select_related("node"))
    assert len(nodes) == 8 and {r.source for r in readings} == {"agent"}
    gpus = [gpu_address(i) for i in range(8)]
    nics = [nic_address(i) for i in range(8)]
    assert len(set(gpus + nics)) == 16
    expected = {
        "memory": set(MEMORY_CONTROLLERS),
        "filesystem": {"/", "/checkpoints", "/scratch"},
        "pcie": set(gpus + nics),
        "clock": {"system"},
        "vmstat": {"kernel"},
    }
    assert set(expected) == set(HOST_KINDS)
    for host in nodes:
        mine = [r for r in readings if r.node.hostname == host]
        for kind, subjects in expected.items():
            assert {r.subject for r in mine if r.kind == kind} == subjects, (host, kind)
    for r in readings:
        declared = HOST_KINDS[r.kind]
        assert declared.read_subject(r.subject) == r.subject
        assert set(r.values) == set(declared.by_name), r  # every declared value, no other
        for name, value in r.values.items():
            assert declared.by_name[name].parse(value) == value, (r, name)
        if r.kind == "memory":
            assert r.values["ue_total"] == 0 and 0 <= r.values["ce_total"] < 40
        elif r.kind == "filesystem":
            assert r.values["readonly"] == 0 and r.values["device_error"] == 0
            assert 0.1 * r.values["size_bytes"] < r.values["avail_bytes"] < r.values["size_bytes"]
        elif r.kind == "pcie":
            assert r.values["role"] == ("gpu" if r.subject in gpus else "nic")
            assert r.values["link_width"] == r.values["max_link_width"] == LANES
            assert r.values["link_speed_gts"] == r.values["max_link_speed_gts"] == 32.0
            assert r.values["aer_fatal_total"] == r.values["aer_nonfatal_total"] == 0
        elif r.kind == "vmstat":
            assert r.values == {"oom_kill_total": 0}
        else:
            assert r.values["synced"] == 1 and 1e-6 < abs(r.values["offset_s"]) <= 1e-3
    # The checkpoint export is one: the same device and size on every node, its free space
    # one function of the time.
    ckpt = [r for r in readings if r.subject == "/checkpoints"]
    assert len(ckpt) == len(nodes)
    assert {(r.values["device"], r.values["fstype"], r.values["size_bytes"]) for r in ckpt} == {
        (CHECKPOINTS.device, "nfs4", CHECKPOINTS.size_bytes)
    }
    assert all(r.values["avail_bytes"] == checkpoints_avail(r.ts) for r in ckpt)
    # What the intake would accept as the agent posts it.
    now = timezone.now()
    items = [
        {
            "node": r.node.hostname,
            "kind": r.kind,
            "subject": r.subject,
            "ts": r.ts.isoformat(),
            "values": r.values,
        }
        for r in readings
    ]
    assert len(parse_host_batch(items, now=now)) == len(readings)


def _but_free_space(values: dict[tuple[str, str, str], dict]) -> dict:
    """The readings without free space, which moves with the clock (`checkpoints_avail`):
    two runs a moment apart may read another second."""
    return {k: {n: x for n, x in v.items() if n != "avail_bytes"} for k, v in values.items()}


def test_same_seed_same_readings_other_seed_others():
    simulate(seed=4)
    first = _values()
    simulate(seed=4)  # replaces the cluster
    again = _values()
    assert _but_free_space(again) == _but_free_space(first)
    assert HostReading.objects.count() == len(first)
    simulate(seed=5)
    other = _values()
    assert other.keys() == first.keys()
    clock = [k for k in first if k[1] == "clock"]
    assert [first[k]["offset_s"] for k in clock] != [other[k]["offset_s"] for k in clock]


def _setup(settings, tmp_path) -> Cluster:  # noqa: ANN001
    settings.DEMO = True
    settings.VAR_DIR = tmp_path
    call_command("demo_setup", gpus=64, days=1, stdout=io.StringIO(), stderr=io.StringIO())
    return Cluster.objects.get(name="kuae-sim")


def _schedule(cluster: Cluster, start: dt.datetime, minutes: int) -> list[tuple]:
    """The host faults raised over `minutes` of 15-second ticks: (minutes in, kind, host, index)."""
    state = DemoState()
    out = []
    t = start
    while t <= start + dt.timedelta(minutes=minutes):
        fault = host_fault_due(cluster, state, t)
        if fault is not None:
            out.append(((t - start).total_seconds() / 60, fault.kind, fault.hostname, fault.gpu))
        t += TICK
    return out


def test_host_faults_come_on_a_seeded_schedule_every_kind_in_turn(settings, tmp_path, monkeypatch):  # noqa: ANN001
    sim = _setup(settings, tmp_path)
    for name in ("kuae-mtt", "kuae-mix"):  # every simulated cluster reports its hosts
        assert HostReading.objects.filter(node__cluster__name=name).exists()
    start = timezone.now()
    faults = _schedule(sim, start, len(HOST_FAULTS) * 40 + 6)
    assert 3 <= faults[0][0] <= 6.25, faults
    gaps = [b[0] - a[0] for a, b in zip(faults, faults[1:], strict=False)]
    assert all(20 <= gap <= 40.25 for gap in gaps), faults
    assert {kind for _, kind, *_ in faults[: len(HOST_FAULTS)]} == {f.slug for f in HOST_FAULTS}
    assert _schedule(sim, start, len(HOST_FAULTS) * 40 + 6) == faults  # seeded
    hosts = set(Node.objects.filter(cluster=sim).values_list("hostname", flat=True))
    assert all(host in hosts for *_, host, _ in faults)

    # The live tick plays the first: scheduled on the first tick, raised when due.
    monkeypatch.setattr(demo, "FAULT_CHANCE", 0)
    counts = demo_tick(now=start, rng=random.Random(1))
    assert counts["host"] == HostReading.objects.exclude(node__state="down").count()
    due = dt.datetime.fromisoformat(str(DemoState.load(state_path()).host["kuae-sim"][0]))
    before = _values()
    demo_tick(now=due, rng=random.Random(2))
    raised = [f for f in DemoState.load(state_path()).faults if f.kind == faults[0][1]]
    assert [(f.hostname, f.gpu) for f in raised if f.hostname in hosts] == [faults[0][2:]]
    fault = next(f for f in HOST_FAULTS if f.slug == faults[0][1])
    key = (faults[0][2], fault.kind, fault.subject(faults[0][3]))
    _assert_fault(fault.slug, before[key], _values()[key])


def _assert_fault(slug: str, before: dict, after: dict) -> None:
    """The reading a fault lands on, after it, against before it."""
    if slug == "edac_ce_burst":
        assert CE_BURST[0] <= after["ce_total"] - before["ce_total"] <= CE_BURST[1] + 1
    elif slug == "edac_ue":
        assert after["ue_total"] == before["ue_total"] + 1
    elif slug == "pcie_x8":
        assert (after["link_width"], after["max_link_width"]) == (TRAINED_DOWN_WIDTH, LANES)
    elif slug == "aer_fatal":
        assert after["aer_fatal_total"] == before["aer_fatal_total"] + 1
    elif slug == "ckpt_readonly":
        assert after["readonly"] == 1
    elif slug == "clock_unsynced":
        assert after["synced"] == 0 and abs(after["offset_s"]) > abs(before["offset_s"])
    elif slug == "oom_kill":
        grew = after["oom_kill_total"] - before["oom_kill_total"]
        assert OOM_KILLS[0] <= grew <= OOM_KILLS[1]
    else:
        raise AssertionError(f"no assertion for {slug}")


@pytest.mark.parametrize("fault", HOST_FAULTS, ids=lambda f: f.slug)
def test_each_host_fault_changes_its_reading_and_the_others_stay_quiet(fault):  # noqa: ANN001
    simulate()
    cluster = Cluster.objects.get()
    host = (
        Node.objects.filter(cluster=cluster)
        .exclude(state="down")
        .order_by("hostname")
        .first()
        .hostname
    )
    index = fault.devices - 1  # the last a fault may land on: a NIC for aer_fatal
    placed = Placed(fault, host, fault.subject(index))
    before = _values()
    held, raised = ([], [placed]) if fault.once else ([placed], [])
    later = timezone.now() + dt.timedelta(minutes=1)
    readings = host_readings(
        cluster=cluster, now=later, rng=random.Random(3), silent=(), held=held, raised=raised
    )
    host_ingest(readings=readings, now=later)
    after = _values()
    _assert_fault(
        fault.slug,
        before[(host, fault.kind, placed.subject)],
        after[(host, fault.kind, placed.subject)],
    )
    for key, values in after.items():
        if key == (host, fault.kind, placed.subject):
            continue
        old = before[key]
        if key[1] == "memory":
            assert values["ue_total"] == 0 and values["ce_total"] - old["ce_total"] <= 1
        elif key[1] == "pcie":
            assert values["link_width"] == LANES and values["aer_fatal_total"] == 0
        elif key[1] == "filesystem":
            assert values["readonly"] == 0
        elif key[1] == "vmstat":
            assert values == old
        else:
            assert values["synced"] == 1 and abs(values["offset_s"]) <= 3e-3
    # The checkpoint export's free space moved, the same on every node.
    assert len({v["avail_bytes"] for k, v in after.items() if k[2] == "/checkpoints"}) == 1


def test_a_tick_reads_and_writes_the_host_in_a_few_queries_whatever_the_size():
    def queries(gpus: int, name: str, prefix: str) -> int:
        simulate(gpus=gpus, cluster=name, prefix=prefix)
        cluster = Cluster.objects.get(name=name)
        later = timezone.now() + dt.timedelta(minutes=1)
        with CaptureQueriesContext(connection) as captured:
            readings = host_readings(cluster=cluster, now=later, rng=random.Random(1), silent=())
            host_ingest(readings=readings, now=later)
        assert (
            len(readings)
            == HostReading.objects.filter(node__cluster=cluster).exclude(node__state="down").count()
        )
        return len(captured)

    assert queries(64, "small", "s-") == queries(512, "large", "l-")
    assert len(MOUNTS) == 3
