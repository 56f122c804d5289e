"""`host_oom` (docs/checks.md, `host_oom`): the fifth host check, written as docs/checks.md's
"Writing a check" says — one plug-in module and its reading kind's declaration. Its
detector on plain values; runs on readings posted as the agent sends them; and the real
Debian node_exporter's vmstat collector on a fake /proc, through the Prometheus intake."""

from __future__ import annotations

import datetime as dt
from html import unescape
from pathlib import Path

import pytest
from django.utils import timezone

from apps.fleet.models import Node
from apps.health.checks import CHECKS, Limits
from apps.health.checks.host_oom import host_oom
from apps.health.detectors.host_counters import HostHistory
from apps.health.models import CheckResult
from apps.incidents.models import Incident
from tests.binaries import NodeExporter
from tests.health.test_host_checks import check, send

pytestmark = pytest.mark.django_db

T0 = timezone.now().replace(microsecond=0) - dt.timedelta(hours=3)
MINUTE = dt.timedelta(minutes=1)


def kernel(kills: int, judged: int | None, *, at: dt.datetime = T0, grew=None) -> HostHistory:  # noqa: ANN001
    return HostHistory(
        node="h01",
        subject="kernel",
        at=at,
        values={"oom_kill_total": kills},
        judged_at=None if judged is None else at - MINUTE,
        judged={} if judged is None else {"oom_kill_total": judged},
        grew=grew or {},
    )


def test_a_kill_warns_naming_how_many_for_the_hour_then_passes() -> None:
    limits = Limits()
    assert host_oom([kernel(4, None)], limits=limits, now=T0)[0].status == "pass"  # first
    (hit,) = host_oom([kernel(6, 4)], limits=limits, now=T0)
    assert hit.status == "warn" and hit.target == "node:h01" and hit.node == "h01"
    assert "ended 2 processes within an hour" in hit.message
    assert hit.outcome.category == "software_bug" and hit.outcome.node_state is None
    kept = {"oom_kill_total": ((T0, 2.0),)}
    later = T0 + dt.timedelta(minutes=30)
    (still,) = host_oom([kernel(6, 6, at=later, grew=kept)], limits=limits, now=later)
    assert still.status == "warn" and "ended 2 processes" in still.message
    after = T0 + dt.timedelta(minutes=61)
    (clear,) = host_oom([kernel(6, 6, at=after, grew=kept)], limits=limits, now=after)
    assert clear.status == "pass" and clear.details["last_hour"] == 0
    # a counter that went down (a reboot) is a reset, never a kill
    assert host_oom([kernel(0, 6)], limits=limits, now=T0)[0].status == "pass"
    # the threshold: up to N kills an hour allowed
    lenient = Limits(host_oom_kills_per_hour=5)
    assert host_oom([kernel(6, 4)], limits=lenient, now=T0)[0].status == "pass"


def test_posted_readings_warn_with_one_software_bug_incident_and_drain_nothing(
    api, client, users, cluster, nodes, job
):
    ada = api("ada")
    client.force_login(users["mia"])
    page = unescape(client.get("/health/").content.decode())
    assert str(CHECKS["host_oom"].label) in page and "out-of-memory kills (host readings" in page
    quiet = [(n.hostname, "vmstat", "kernel", {"oom_kill_total": 7}) for n in nodes]
    send(ada, T0, quiet)
    assert check(cluster, "host_oom", T0 + dt.timedelta(seconds=5))["pass"] == len(nodes)
    readings = [*quiet]
    readings[1] = ("gpu001", "vmstat", "kernel", {"oom_kill_total": 8})
    send(ada, T0 + MINUTE, readings)
    counts = check(cluster, "host_oom", T0 + MINUTE + dt.timedelta(seconds=5))
    assert (counts["warn"], counts["pass"]) == (1, len(nodes) - 1)
    result = CheckResult.objects.get(kind="host_oom", target="node:gpu001")
    assert result.status == "warn" and "ended 1 process within an hour" in result.message
    incident = Incident.objects.get()
    assert (incident.category, incident.severity) == ("software_bug", "sev3")
    assert [n.hostname for n in incident.nodes.all()] == ["gpu001"] and not incident.interrupts_job
    assert Node.objects.get(hostname="gpu001").state == "healthy"


def test_the_real_node_exporters_vmstat_reaches_the_check(api, cluster, nodes, tmp_path: Path):
    """node_exporter's vmstat collector on a fake /proc: `node_vmstat_oom_kill` is stored as
    the `vmstat` reading its declaration names, and the check warns when it grows."""
    procfs = tmp_path / "proc"
    procfs.mkdir()
    vmstat = procfs / "vmstat"
    vmstat.write_text("nr_free_pages 81234\npgfault 991\noom_kill 0\n")
    exporter = NodeExporter(
        tmp_path / "sys", tmp_path / "node_exporter.log", collectors=("vmstat",), procfs=procfs
    )
    try:
        ada = api("ada")
        for minute, kills in ((0, 0), (1, 3)):
            vmstat.write_text(f"nr_free_pages 81234\npgfault 991\noom_kill {kills}\n")
            text = exporter.scrape()
            assert f"node_vmstat_oom_kill {kills}" in text
            at = (T0 + minute * MINUTE).isoformat().replace("+00:00", "Z")
            answer = ada.post(
                f"/api/v1/ingest/prometheus/?node=gpu000&ts={at}", text, content_type="text/plain"
            )
            assert answer.status_code == 202 and answer.json()["host"] == 1, answer.content
            check(cluster, "host_oom", T0 + minute * MINUTE + dt.timedelta(seconds=5))
    finally:
        exporter.stop()
    result = CheckResult.objects.get(kind="host_oom", target="node:gpu000")
    assert result.status == "warn" and "ended 3 processes" in result.message
