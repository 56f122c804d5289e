"""The counter host checks (`pcie`, `host_memory`, `host_oom`) load only the subjects
something happened to (docs/checks.md, Candidates): a subject whose latest reading holds the
judged values and whose stored result is the plain pass is counted, not loaded. Two clusters
get the same readings run after run; one judges as every run did before (each subject
loaded), the other with candidates: results, incidents, node states and counts are the same
at every step, and a steady run loads nothing, at 1× and 3× the nodes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.health import host_readings
from apps.health.checks import host_memory, host_oom, pcie
from apps.health.models import CheckResult, CheckRun
from apps.health.services import run_execute
from apps.incidents.models import Incident
from apps.telemetry.host import HostReadingIn
from apps.telemetry.services import telemetry_batch_ingest

pytestmark = pytest.mark.django_db

T0 = timezone.now().replace(microsecond=0) - dt.timedelta(hours=2)
MINUTE = dt.timedelta(minutes=1)
KINDS = ("pcie", "host_memory", "host_oom")
LINK = {"link_width": 16, "max_link_width": 16, "link_speed_gts": 32, "max_link_speed_gts": 32}
AER = {"aer_correctable_total": 0, "aer_nonfatal_total": 0, "aer_fatal_total": 0}
Values = dict[tuple[int, str, str], dict]  # (node number, kind, subject) → values


def _fleet(name: str, count: int) -> Cluster:
    cluster = cluster_create(
        name=name, gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    start = T0 - dt.timedelta(days=3)
    nodes_register(
        cluster=cluster,
        specs=[NodeSpec(hostname=f"{name}-n{i:03d}", in_service_at=start) for i in range(count)],
    )
    return cluster


def _quiet(count: int) -> Values:
    """Every node's readings with nothing wrong: 2 GPUs and a NIC at full link, 2 memory
    controllers, the kernel's OOM counter."""
    out: Values = {}
    for i in range(count):
        for address, role in (("0000:17:00.0", "gpu"), ("0000:2a:00.0", "gpu")):
            out[(i, "pcie", address)] = {"role": role, **LINK, **AER}
        out[(i, "pcie", "0000:3b:00.0")] = {"role": "nic", **LINK, **AER}
        for mc in ("mc0", "mc1"):
            out[(i, "memory", mc)] = {"ce_total": 0, "ue_total": 0}
        out[(i, "vmstat", "kernel")] = {"oom_kill_total": 0}
    return out


def _send(cluster: Cluster, values: Values, at: dt.datetime) -> None:
    readings = [
        HostReadingIn(f"{cluster.name}-n{i:03d}", kind, subject, at, dict(v))
        for (i, kind, subject), v in values.items()
    ]
    telemetry_batch_ingest(samples=[], readings=[], host=readings, now=at)


def _run(cluster: Cluster, kind: str, at: dt.datetime) -> dict:
    run = CheckRun.objects.create(cluster=cluster, kind=kind, requested_by="test")
    done = run_execute(run_id=run.pk, now=at)
    assert done is not None and done.status == "done", done and done.error
    return {k: v for k, v in done.counts.items()}


def _state(cluster: Cluster) -> tuple:
    """Everything the runs left, with the cluster's name taken out of the hostnames."""
    strip = f"{cluster.name}-"
    results = sorted(
        (r.kind, r.target.replace(strip, ""), r.status, r.message, str(r.details), r.since)
        for r in CheckResult.objects.filter(cluster=cluster)
    )
    incidents = sorted(
        (i.category, i.severity, i.title.replace(strip, ""), i.status)
        for i in Incident.objects.filter(cluster=cluster)
    )
    states = sorted(
        (n.hostname.replace(strip, ""), n.state) for n in Node.objects.filter(cluster=cluster)
    )
    return results, incidents, states


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], list[int]]]:
    """How many subjects each run's detectors were given (appended as the runs go)."""
    seen: list[int] = []
    for module, name in ((pcie, "pcie"), (host_memory, "host_memory"), (host_oom, "host_oom")):
        judge = getattr(module, name)

        def counted(items, *args, _judge=judge, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            seen.append(len(items))
            return _judge(items, *args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    yield lambda: seen


def test_candidates_give_every_run_the_same_outcome(loaded, monkeypatch):  # noqa: ANN001
    old, new = _fleet("old", 4), _fleet("new", 4)
    values = _quiet(4)

    def step(at: dt.datetime) -> list[int]:
        for cluster in (old, new):
            _send(cluster, values, at)
        counts, judged = {}, []
        for kind in KINDS:
            with monkeypatch.context() as whole:  # as before: every subject loaded
                whole.setattr(host_readings, "_skip_unchanged", lambda _ctx, rows, _u: rows)
                counts["old", kind] = _run(old, kind, at + dt.timedelta(seconds=5))
            counts["new", kind] = _run(new, kind, at + dt.timedelta(seconds=5))
            judged.append(loaded()[-1])
        for kind in KINDS:
            assert counts["old", kind] == counts["new", kind], kind
        assert _state(old) == _state(new)
        return judged

    step(T0)  # first readings: every subject judged, a pass written for each
    assert CheckResult.objects.filter(cluster=new, kind="pcie").count() == 12
    # the same values again: nothing loaded but the memory controllers, whose first pass
    # said growth is measured from the next reading (their words change once)
    assert step(T0 + MINUTE) == [0, 8, 0]
    assert step(T0 + 2 * MINUTE) == [0, 0, 0]
    # a GPU's link at x8, a NIC's correctable errors +60, a controller's +60, an OOM kill
    values[(1, "pcie", "0000:17:00.0")] = {"role": "gpu", **LINK, **AER, "link_width": 8}
    values[(2, "pcie", "0000:3b:00.0")] = {"role": "nic", **LINK, **AER}
    values[(2, "pcie", "0000:3b:00.0")]["aer_correctable_total"] = 60
    values[(3, "memory", "mc1")] = {"ce_total": 60, "ue_total": 0}
    values[(0, "vmstat", "kernel")] = {"oom_kill_total": 1}
    step(T0 + 3 * MINUTE)
    # the same values: the warning and the hour's growth kept are judged again, not the rest
    judged = step(T0 + 4 * MINUTE)
    assert judged == [2, 1, 1]
    # 60 more within the hour: over 100, a warning
    values[(2, "pcie", "0000:3b:00.0")]["aer_correctable_total"] = 120
    values[(3, "memory", "mc1")] = {"ce_total": 120, "ue_total": 0}
    step(T0 + 5 * MINUTE)
    assert CheckResult.objects.get(target="pcie:new-n002/0000:3b:00.0").status == "warn"
    assert CheckResult.objects.get(target="mc:new-n003/mc1").status == "warn"
    # the link back at x16: cleared, and the incident's timeline says so
    values[(1, "pcie", "0000:17:00.0")] = {"role": "gpu", **LINK, **AER}
    step(T0 + 6 * MINUTE)
    assert CheckResult.objects.get(target="pcie:new-n001/0000:17:00.0").status == "pass"
    # an hour on, nothing grew: the growth kept ages out, the warnings clear, and then
    # nothing is loaded again
    assert step(T0 + 70 * MINUTE) == [1, 1, 1]
    assert CheckResult.objects.get(target="pcie:new-n002/0000:3b:00.0").status == "pass"
    assert CheckResult.objects.get(target="mc:new-n003/mc1").status == "pass"
    assert step(T0 + 71 * MINUTE) == [0, 0, 0]


@pytest.mark.parametrize("count", [4, 12])
def test_a_steady_run_loads_nothing_whatever_the_fleet(loaded, count):  # noqa: ANN001
    cluster = _fleet("c", count)
    values = _quiet(count)
    for k in range(3):
        _send(cluster, values, T0 + k * MINUTE)
        for kind in KINDS:
            counts = _run(cluster, kind, T0 + k * MINUTE + dt.timedelta(seconds=5))
            assert counts["pass"] == {"pcie": 3, "host_memory": 2, "host_oom": 1}[kind] * count
    assert loaded()[-3:] == [0, 0, 0]
