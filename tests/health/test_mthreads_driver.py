"""A Moore Threads driver fault line, as the node agent's kernel-log follower sends it
(`kuae-agent run --kmsg-mthreads`, docs/agent.md), is accepted by the events intake and
judged by `gpu_errors` as an unknown fault: it warns, opens no incident and changes no node
— Moore Threads publish no catalogue of the driver's lines (docs/xid.md). The lines are the
shapes the agent's tests take from Moore Threads' published material; no Moore Threads GPU
is here."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from apps.health.models import CheckResult, CheckRun
from apps.health.services import run_execute
from apps.incidents.models import Incident
from apps.telemetry.models import TelemetryEvent
from kuae_agent.kernellog import EVENTS_PATH, FileLog, XidFollower
from kuae_agent.spool import Spool

pytestmark = pytest.mark.django_db


def test_a_driver_fault_line_from_the_agent_warns_as_unknown(api, cluster, nodes, tmp_path):
    host = nodes[0].hostname
    log = tmp_path / "kmsg.txt"
    log.write_text(
        "3,2,0,-;mtgpu 0000:3b:00.0: GPU fault (1: Guilty Lockup) detected when processing kick\n"
        "4,3,1000,-;MTGPU: a warning with no PCI address\n"
    )
    spool = Spool(tmp_path / "spool")
    follower = XidFollower(
        FileLog(log), node=host, spool=spool, cursor_file=tmp_path / "cursor",
        backfill_s=float("inf"), mthreads=True,
    )  # fmt: skip
    follower.poll(timezone.now())
    (batch,) = [item for item in spool.pending() if item.path == EVENTS_PATH]
    response = api("ada").post("/api/v1/ingest/events/", json.loads(batch.body), format="json")
    assert response.status_code == 202, response.content
    stored = TelemetryEvent.objects.filter(kind="mthreads_driver")
    assert stored.count() == 2
    assert {e.pci_bus for e in stored} == {"0000:3b:00.0", ""}
    assert all(e.kind_label == "Moore Threads driver fault" for e in stored)

    run = CheckRun.objects.create(cluster=cluster, kind="gpu_errors", requested_by="test")
    done = run_execute(run_id=run.pk)
    assert done is not None and done.status == "done", done and done.error
    warned = CheckResult.objects.filter(kind="gpu_errors", status="warn")
    assert warned.count() == 2
    assert all("judged unknown" in r.message for r in warned)
    assert not Incident.objects.exists()
    nodes[0].refresh_from_db()
    assert nodes[0].state == "healthy"
