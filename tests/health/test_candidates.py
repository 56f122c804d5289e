"""`thermal`, `gpu_errors`, `slow_node` and `sdc` judge only the GPUs (and nodes) chosen in
SQL (issue 46; docs/checks.md, Candidates): their findings are those of the whole-fleet path
less passes that would be written as they are stored, the run's counts are the same, and a
steady run's statements and the rows it reads do not grow with the healthy GPUs."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.fleet.models import GPU, Cluster
from apps.fleet.services import NodeSpec, nodes_register
from apps.health import inputs
from apps.health.checks.base import Context, skip_maintenance
from apps.health.checks.gpu_errors import gpu_events, node_gpus
from apps.health.checks.sdc import non_finite
from apps.health.checks.slow_node import node_timings
from apps.health.detectors import Finding, gpu_errors, sdc, slow_node, thermal
from apps.health.models import CheckResult, CheckRun
from apps.health.services import detect, limits_for, run_execute
from apps.telemetry.models import TelemetryEvent

pytestmark = pytest.mark.django_db

KINDS = ("thermal", "gpu_errors")
COOL = {"temp_c": 60, "mem_temp_c": 70.5, "row_remap_failure": 0}


def _nodes(cluster: Cluster, names: list[str], now: dt.datetime) -> None:
    """Nodes of 8 GPUs each, every GPU cool and fresh at `now`."""
    made = nodes_register(cluster=cluster, specs=[NodeSpec(hostname=h, rack="r0") for h in names])
    have = set(GPU.objects.filter(node__in=made).values_list("node_id", "index"))
    GPU.objects.bulk_create(
        GPU(node=n, index=i, model="H100") for n in made for i in range(8) if (n.pk, i) not in have
    )
    GPU.objects.filter(node__in=made).update(metrics=dict(COOL), updated_at=now)


def _whole_fleet(kind: str, ctx: Context) -> list[Finding]:
    """What the check found before candidates: every GPU's latest values judged."""
    c, now, limits = ctx.cluster, ctx.now, ctx.limits
    names = {j.pk: j.name for j in ctx.jobs}
    if kind == "thermal":
        gpus = inputs.gpus_latest(c, ("temp_c", "mem_temp_c"))
        found = thermal(gpus, now=now, limits=limits, hot_runs=ctx.streaks("hot_runs"))
    elif kind == "slow_node":
        gpus = inputs.gpus_latest(c, ("gemm_tflops",))
        found = slow_node(node_timings(ctx.jobs, now), gpus, limits=limits, job_names=names)
    elif kind == "sdc":
        since = now - dt.timedelta(seconds=limits.sdc_round_s)
        gpus = inputs.gpus_latest(c, ("gemm_checksum",))
        found = sdc(non_finite(ctx.jobs, since), names, gpus, limits=limits)
    else:
        found = gpu_errors(
            gpu_events(c, inputs.previous_run_start(c, kind, now)),
            inputs.gpus_latest(c, ("row_remap_failure",)),
            limits=limits,
            nodes=node_gpus(c, now - dt.timedelta(seconds=limits.heartbeat_s)),
            missing_runs=ctx.streaks("missing_runs"),
        )
    return skip_maintenance(found, ctx)


def _judge(cluster: Cluster, kind: str, now: dt.datetime) -> list[Finding]:
    """Run `kind` at `now` after checking that its findings are the whole fleet's less the
    passes stored as they are (which the run would not write), and that its counts are
    those the whole fleet's findings give. Returns its findings."""
    limits = limits_for(cluster)
    full = _whole_fleet(kind, Context(kind, cluster, now, limits))
    found, ctx = detect(kind, cluster, now, limits)
    assert all(f in full for f in found), [f for f in found if f not in full]
    rest = [f for f in full if f not in found]
    stored = {
        t: (s, m)
        for t, s, m in CheckResult.objects.filter(kind=kind).values_list(
            "target", "status", "message"
        )
    }
    assert all(f.status == "pass" and stored.get(f.target) == ("pass", f.message) for f in rest)
    assert ctx.unchanged == len(rest)
    run = CheckRun.objects.create(cluster=cluster, kind=kind, requested_by="test")
    done = run_execute(run_id=run.pk, now=now)
    assert done is not None and done.status == "done", done and done.error
    counts = {s: sum(f.status == s for f in full) for s in ("pass", "warn", "fail")}
    assert {s: done.counts[s] for s in counts} == counts
    return found


def _result(kind: str, target: str) -> tuple[str, str, dt.datetime]:
    r = CheckResult.objects.get(kind=kind, target=target)
    return r.status, r.message, r.at


def _set(host: str, index: int, now: dt.datetime, **metrics: object) -> None:
    GPU.objects.filter(node__hostname=host, index=index).update(
        metrics={**COOL, **metrics}, updated_at=now
    )


def test_candidates_give_the_whole_fleets_verdicts(cluster):
    t = [timezone.now().replace(microsecond=0) + dt.timedelta(minutes=m) for m in range(7)]
    _nodes(cluster, [f"h{i}" for i in range(4)], t[0])
    for step, now in enumerate(t):
        # from step 1 on, one GPU of h3 has stopped reporting while its others still do
        GPU.objects.filter(node__cluster=cluster).exclude(
            node__hostname="h3", index=7, updated_at__lt=t[1]
        ).update(updated_at=now)
        if step == 1:
            _set("h0", 1, now, temp_c=95)  # hot
            _set("h1", 2, now, row_remap_failure=1)  # failing memory
            _set("h3", 4, now, mem_temp_c="n/a")  # a value SQL cannot compare
            TelemetryEvent.objects.create(
                node=cluster.nodes.get(hostname="h2"),
                gpu=3,
                at=now,
                recorded_at=now,
                kind="xid",
                value=31,
            )
            GPU.objects.filter(node__hostname="h3", index=7).update(
                updated_at=now - dt.timedelta(hours=1)
            )
        if step == 3:
            _set("h0", 1, now)  # cools down
            TelemetryEvent.objects.create(
                node=cluster.nodes.get(hostname="h2"),
                gpu=3,
                at=now,
                recorded_at=now,
                kind="xid",
                value=13,
            )
        if step == 5:
            _nodes(cluster, ["h9"], now)  # a new node's GPUs
        found = {kind: _judge(cluster, kind, now) for kind in KINDS}
        targets = {kind: {f.target for f in fs} for kind, fs in found.items()}
        if step == 0:  # the first run writes a pass for every GPU
            assert len(targets["thermal"]) == 32
            assert CheckResult.objects.filter(kind="thermal", status="pass").count() == 32
        if step == 2:
            assert _result("thermal", "gpu:h0/1")[:2] == (
                "warn",
                "GPU 1: GPU 95 °C ≥ 90 (2 runs in a row)",
            )
            assert _result("gpu_errors", "gpu:h1/2")[0] == "fail"
            assert _result("gpu_errors", "node:h3")[0] == "fail"
            # the healthy GPUs are neither loaded nor judged
            assert targets["thermal"] == {"gpu:h0/1", "gpu:h3/4"}
        if step == 3:
            assert _result("thermal", "gpu:h0/1") == ("pass", "within limits", now)
            assert _result("gpu_errors", "gpu:h2/3")[0] == "warn"
        if step == 4:  # the cooled GPU is written once, then left as it is
            assert _result("thermal", "gpu:h0/1") == ("pass", "within limits", t[3])
            assert "gpu:h0/1" not in targets["thermal"]
            assert _result("gpu_errors", "gpu:h2/3")[:2] == (
                "pass",
                "no new XID, ECC or link error",
            )
        if step == 5:
            new = {f"gpu:h9/{i}" for i in range(8)}
            assert new <= targets["thermal"] and new <= targets["gpu_errors"]
            assert CheckResult.objects.filter(target__in=new, status="pass").count() == 16
        if step == 6:
            assert targets["thermal"] == {"gpu:h3/4"}
            assert "gpu:h9/0" not in targets["gpu_errors"]


def _steady(
    cluster: Cluster, now: dt.datetime, kinds: tuple[str, ...] = KINDS
) -> dict[str, tuple[int, int]]:
    """kind → (statements, findings) of a steady run of each kind at `now`."""
    out = {}
    limits = limits_for(cluster)
    for kind in kinds:
        with CaptureQueriesContext(connection) as queries:
            found, _ = detect(kind, cluster, now, limits)
        out[kind] = (len(queries), len(found))
    return out


def test_a_steady_run_reads_no_more_for_more_healthy_gpus(cluster):
    t = [timezone.now().replace(microsecond=0) + dt.timedelta(minutes=m) for m in range(6)]
    _nodes(cluster, [f"a{i}" for i in range(3)], t[0])
    GPU.objects.filter(node__hostname="a0", index=0).update(metrics={**COOL, "temp_c": 99})
    for now in t[:2]:
        GPU.objects.filter(node__cluster=cluster).update(updated_at=now)
        for kind in KINDS:
            _judge(cluster, kind, now)
    GPU.objects.filter(node__cluster=cluster).update(updated_at=t[2])
    once = _steady(cluster, t[2])
    _nodes(cluster, [f"b{i}" for i in range(6)], t[3])  # three times the nodes
    for now in t[3:5]:
        GPU.objects.filter(node__cluster=cluster).update(updated_at=now)
        for kind in KINDS:
            _judge(cluster, kind, now)
    GPU.objects.filter(node__cluster=cluster).update(updated_at=t[5])
    assert _steady(cluster, t[5]) == once
    assert once["thermal"][1] == 1  # the hot GPU alone


PROBED = ("slow_node", "sdc")
PROBE = {"gemm_tflops": 720.0, "gemm_checksum": 1834.25}


def _probed(cluster: Cluster, names: list[str], now: dt.datetime, model: str = "H100") -> None:
    """Nodes of 8 GPUs of `model`, each with the round's GEMM probe received at `now`: GPU i
    at 700 + 5i TFLOP/s, so a model's median lies between two values."""
    made = nodes_register(cluster=cluster, specs=[NodeSpec(hostname=h, rack="r0") for h in names])
    have = set(GPU.objects.filter(node__in=made).values_list("node_id", "index"))
    GPU.objects.bulk_create(
        GPU(node=n, index=i, model=model) for n in made for i in range(8) if (n.pk, i) not in have
    )
    for i in range(8):
        GPU.objects.filter(node__in=made, index=i).update(
            model=model,
            metrics={**PROBE, "gemm_tflops": 700.0 + 5 * i},
            updated_at=now,
            probe_at=now,
        )


def _probe(host: str, indexes: range | list[int], **metrics: object) -> None:
    """New values of some metrics of some of a node's GPUs (the rest kept)."""
    for gpu in GPU.objects.filter(node__hostname=host, index__in=list(indexes)):
        GPU.objects.filter(pk=gpu.pk).update(metrics={**gpu.metrics, **metrics})


def _statuses(kind: str) -> dict[str, tuple[str, str]]:
    return {
        t: (s, m)
        for t, s, m in CheckResult.objects.filter(kind=kind).values_list(
            "target", "status", "message"
        )
    }


def test_medians_and_votes_figured_in_sql_give_the_whole_fleets_verdicts(cluster):
    t = [timezone.now().replace(microsecond=0) + dt.timedelta(minutes=m) for m in range(8)]
    _probed(cluster, [f"h{i}" for i in range(6)], t[0])
    _probed(cluster, ["h6"], t[0], model="NVIDIA H100 80GB HBM3")  # the same model
    _probed(cluster, ["m0", "m1", "m2"], t[0], model="A100")  # a round of three nodes
    for step, now in enumerate(t):
        # every GPU's probe arrives each minute, but h5/7's stopped at step 2 (stale)
        GPU.objects.filter(node__cluster=cluster).exclude(
            node__hostname="h5", index=7, probe_at__lt=t[2]
        ).update(probe_at=now, updated_at=now)
        if step == 1:
            _probe("h0", [1], gemm_tflops=600.0)  # slow
            # 56 H100s: 7 of each value but h0's two below, so the median is 717.5 and 645.75
            _probe("h0", [2], gemm_tflops=645.75)  # is exactly 0.90 of it: not slow
            _probe("h1", range(4), gemm_checksum=9.0)  # split evenly: h1 casts no vote
            _probe("h2", [3], gemm_checksum=5.5)  # outvoted
            _probe("m2", range(8), gemm_checksum=2.0)  # only 2 other nodes outvote it
            _probe("m1", [0], gemm_tflops=100.0)  # slow among the A100s
        if step == 2:
            GPU.objects.filter(node__hostname="h5", index=7).update(
                metrics={**PROBE, "gemm_checksum": 77.0},
                probe_at=now - dt.timedelta(hours=1),
            )
            _probe("h3", [0], gemm_tflops="n/a", gemm_checksum="n/a")  # not numbers
            _probe("m0", [5], gemm_checksum=True)  # read as 1 (SQLite) or True: not 1834.25
        if step == 3:
            _probe("h0", [1], gemm_tflops=705.0)  # recovers
            _probe("h2", [3], gemm_checksum=1834)  # its own value, then another
            _probe("h1", range(8), gemm_checksum=1834.25)  # agrees again
        if step == 4:
            _probed(cluster, ["h9"], now)  # a new node's GPUs
            _probe("h2", [3], gemm_checksum=1834.25)
        if step == 5:  # a new round: every GPU's checksum moves on, h4's the old one
            for gpu in GPU.objects.filter(node__cluster=cluster, model__contains="H100"):
                _probe(gpu.node.hostname, [gpu.index], gemm_checksum=2000)
            _probe("h4", range(8), gemm_checksum=1834.25)
        if step == 6:  # half the GPUs of h4 catch up: split, no vote
            _probe("h4", range(4), gemm_checksum=2000.0)
        found = {kind: _judge(cluster, kind, now) for kind in PROBED}
        targets = {kind: {f.target for f in fs} for kind, fs in found.items()}
        slow, vote = _statuses("slow_node"), _statuses("sdc")
        if step == 0:  # the first run writes a pass for every GPU
            assert len(targets["slow_node"]) == len(targets["sdc"]) == 80
        if step == 1:
            assert slow["gpu:h0/1"][0] == slow["gpu:m1/0"][0] == "warn"
            assert slow["gpu:h0/2"] == ("pass", "GEMM throughput within the limit")
            assert vote["gpu:h2/3"][0] == "fail"
            assert vote["gpu:h1/0"][0] == "fail" and vote["gpu:h1/4"][0] == "pass"
            assert vote["gpu:m2/0"][0] == "pass"  # as stored: no verdict this run
            assert "gpu:m2/0" not in targets["sdc"]
        if step == 2:  # only what is not a stored pass is loaded
            # h3/0's value left the median: 55 values, its middle now 720, which h0/2 is
            # under 0.90 of
            assert targets["slow_node"] == {"gpu:h0/1", "gpu:h0/2", "gpu:m1/0"}
            assert slow["gpu:h0/2"][1].startswith("GEMM 645.8 TFLOP/s is 90% of the NVIDIA H100")
            assert slow["gpu:h0/2"][1].endswith(" median (720.0)")
            assert {"gpu:h2/3", "gpu:h1/0"} <= targets["sdc"]
            assert "gpu:h5/7" not in targets["sdc"] and "gpu:h0/0" not in targets["sdc"]
        if step == 3:
            assert slow["gpu:h0/1"][0] == "pass" and vote["gpu:h1/0"][0] == "pass"
            assert vote["gpu:h2/3"][1].startswith("GEMM checksum 1834 differs")
        if step == 4:
            new = {f"gpu:h9/{i}" for i in range(8)}
            assert new <= targets["slow_node"] and new <= targets["sdc"]
            assert vote["gpu:h2/3"][0] == "pass"
        if step == 5:
            assert {vote[f"gpu:h4/{i}"][0] for i in range(8)} == {"fail"}
            assert "gpu:h0/0" not in targets["sdc"]  # agrees with the new round, as stored
        if step == 6:
            assert vote["gpu:h4/0"][0] == "pass" and vote["gpu:h4/4"][0] == "fail"


def test_a_steady_probe_run_reads_no_more_for_more_healthy_gpus(cluster):
    # from a minute on: the first run already makes a node suspect, after it entered service
    t = [timezone.now().replace(microsecond=0) + dt.timedelta(minutes=m) for m in range(1, 7)]
    _probed(cluster, [f"a{i}" for i in range(4)], t[0])
    _probe("a0", [0], gemm_tflops=300.0, gemm_checksum=1.5)

    def judge(now: dt.datetime) -> None:
        GPU.objects.filter(node__cluster=cluster).update(probe_at=now, updated_at=now)
        for kind in PROBED:
            _judge(cluster, kind, now)

    for now in t[:2]:
        judge(now)
    GPU.objects.filter(node__cluster=cluster).update(probe_at=t[2], updated_at=t[2])
    once = _steady(cluster, t[2], PROBED)
    _probed(cluster, [f"b{i}" for i in range(8)], t[3])  # three times the nodes
    for now in t[3:5]:
        judge(now)
    GPU.objects.filter(node__cluster=cluster).update(probe_at=t[5], updated_at=t[5])
    assert _steady(cluster, t[5], PROBED) == once
    assert once["slow_node"][1] == once["sdc"][1] == 1  # the slow, outvoted GPU alone
