"""The live demo's host faults are what the host checks judge (docs/simulator.md, Host
faults; docs/checks.md, `host_memory`, `pcie`, `storage`, `clock`): each row of
`HOST_FAULTS`, raised on a simulated node after a run judged its quiet readings, gets the
verdict its row says from the real check, on the target it landed on, and no other target
of that check is anything but a pass."""

from __future__ import annotations

import datetime as dt
import io
import random

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.health.models import CheckResult
from apps.health.services import runs_execute_now
from apps.simulator.host import HOST_FAULTS, REQUIRED_MOUNTS, Placed, host_readings
from apps.telemetry.services import host_ingest

pytestmark = pytest.mark.django_db


def _target(check: str, host: str, subject: str) -> str:
    if check == "storage":
        return f"mount:{host}:{subject}"
    if check == "clock":
        return f"clock:{host}"
    if check == "host_oom":
        return f"node:{host}"
    return f"{'mc' if check == 'host_memory' else 'pcie'}:{host}/{subject}"


def _post(cluster: Cluster, at: dt.datetime, *, held=(), raised=()) -> None:  # noqa: ANN001
    readings = host_readings(
        cluster=cluster,
        now=at,
        rng=random.Random(5),
        silent=(),
        held=list(held),
        raised=list(raised),
    )
    host_ingest(readings=readings, now=at)


@pytest.mark.parametrize("fault", HOST_FAULTS, ids=lambda f: f.slug)
def test_each_demo_host_fault_gets_its_rows_verdict(fault):  # noqa: ANN001
    call_command("simulate", gpus=32, days=1, seed=2, stdout=io.StringIO(), stderr=io.StringIO())
    cluster = Cluster.objects.get()
    assert cluster.required_mounts == REQUIRED_MOUNTS  # the simulated cluster requires them
    host = Node.objects.filter(cluster=cluster).exclude(state="down").order_by("hostname")[0]
    placed = Placed(fault, host.hostname, fault.subject(fault.devices - 1))
    now = timezone.now()
    _post(cluster, now + dt.timedelta(seconds=30))
    runs_execute_now(cluster=cluster, kinds=[fault.check], requested_by="test")  # judged: quiet

    held, raised = ([], [placed]) if fault.once else ([placed], [])
    _post(cluster, now + dt.timedelta(seconds=60), held=held, raised=raised)
    runs_execute_now(cluster=cluster, kinds=[fault.check], requested_by="test")
    if fault.check == "clock":  # unsynced in two runs in a row
        _post(cluster, now + dt.timedelta(seconds=90), held=held)
        runs_execute_now(cluster=cluster, kinds=[fault.check], requested_by="test")

    results = dict(
        CheckResult.objects.filter(cluster=cluster, kind=fault.check).values_list(
            "target", "status"
        )
    )
    target = _target(fault.check, host.hostname, placed.subject)
    assert results[target] == fault.result, (target, results.get(target))
    others = {t: s for t, s in results.items() if t != target and s != "pass"}
    assert others == {}
