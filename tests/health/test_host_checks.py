"""The host checks run on host readings posted to the telemetry intake
(docs/checks.md, `host_memory`; `pcie`; `clock`): runs executed as the worker executes
them, and what they change — results, incidents, node states; and "not monitored" on the
Health page until a cluster's nodes report."""

from __future__ import annotations

import datetime as dt
from html import unescape
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.fleet.models import Node
from apps.health.checks import clock, host_memory, pcie
from apps.health.models import CheckResult, CheckRun
from apps.health.services import run_execute
from apps.incidents.models import Incident
from apps.telemetry.models import HostReading

pytestmark = pytest.mark.django_db

T0 = timezone.now().replace(microsecond=0) - dt.timedelta(hours=2)
MINUTE = dt.timedelta(minutes=1)
AER = {"aer_correctable_total": 0, "aer_nonfatal_total": 0, "aer_fatal_total": 0}
LINK = {"link_width": 16, "max_link_width": 16, "link_speed_gts": 32, "max_link_speed_gts": 32}


def send(client, at: dt.datetime, items: list[tuple[str, str, str, dict]]) -> None:  # noqa: ANN001
    """Post host readings (node, kind, subject, values) at `at`, as the agent sends them."""
    body = {
        "host": [
            {"node": node, "kind": kind, "subject": subject, "ts": at.isoformat(), "values": v}
            for node, kind, subject, v in items
        ]
    }
    response = client.post("/api/v1/ingest/telemetry/", body, format="json")
    assert response.status_code == 202, response.content


def check(cluster, kind: str, at: dt.datetime) -> dict[str, int]:  # noqa: ANN001
    """One run of `kind` at `at`, as the worker runs it; its counts."""
    run = CheckRun.objects.create(cluster=cluster, kind=kind, requested_by="test")
    done = run_execute(run_id=run.pk, now=at)
    assert done is not None and done.status == "done", done and done.error
    return done.counts


def state(host: str) -> str:
    return Node.objects.get(hostname=host).state


@pytest.fixture
def ada(api):  # noqa: ANN001, ANN201
    return api("ada")


def test_an_uncorrectable_memory_error_drains_its_node_with_one_sev2_on_its_job(
    ada, cluster, nodes, job
):
    quiet = [(n.hostname, "memory", "mc0", {"ce_total": 0, "ue_total": 0}) for n in nodes]
    send(ada, T0, quiet)
    assert check(cluster, "host_memory", T0 + 5 * dt.timedelta(seconds=1))["pass"] == 8
    assert not Incident.objects.exists()
    # gpu000 (in the job) an uncorrectable error; gpu005 a burst of correctable ones.
    readings = [*quiet]
    readings[0] = ("gpu000", "memory", "mc0", {"ce_total": 0, "ue_total": 1})
    readings[5] = ("gpu005", "memory", "mc0", {"ce_total": 250, "ue_total": 0})
    send(ada, T0 + MINUTE, readings)
    counts = check(cluster, "host_memory", T0 + MINUTE + dt.timedelta(seconds=5))
    assert (counts["fail"], counts["warn"], counts["pass"]) == (1, 1, 6)
    failed = CheckResult.objects.get(kind="host_memory", target="mc:gpu000/mc0")
    assert failed.status == "fail" and "ue_total +1" in failed.message
    ue = Incident.objects.get(category="host_memory", severity="sev2")
    assert ue.interrupts_job and ue.job == job
    assert [n.hostname for n in ue.nodes.all()] == ["gpu000"]
    assert "memory controller mc0" in ue.title
    assert state("gpu000") == "drained"
    ce = Incident.objects.get(category="host_memory", severity="sev3")
    assert not ce.interrupts_job and state("gpu005") == "suspect"
    assert "250 correctable memory errors within an hour > 100" in (
        CheckResult.objects.get(target="mc:gpu005/mc0").message
    )
    # What was judged is kept with the run: the same reading again grows nothing.
    row = HostReading.objects.get(node__hostname="gpu000", kind="memory")
    assert row.judged_ts == T0 + MINUTE and row.judged_values["ue_total"] == 1
    check(cluster, "host_memory", T0 + 2 * MINUTE)
    assert Incident.objects.count() == 2
    # A reset (a reboot) is silent.
    send(ada, T0 + 3 * MINUTE, [("gpu005", "memory", "mc0", {"ce_total": 0, "ue_total": 0})])
    counts = check(cluster, "host_memory", T0 + 3 * MINUTE + dt.timedelta(seconds=5))
    assert counts["fail"] == 0
    assert CheckResult.objects.get(target="mc:gpu005/mc0").status != "fail"


def test_a_gpu_link_at_x8_warns_an_aer_fatal_error_drains(ada, cluster, nodes, job):
    def devices(**changed: dict) -> list[tuple[str, str, str, dict]]:
        out = []
        for node in ("gpu001", "gpu006"):
            for address, role in (("0000:17:00.0", "gpu"), ("0000:3a:00.0", "nic")):
                values = {"role": role, **LINK, **AER, **changed.get(f"{node}/{role}", {})}
                out.append((node, "pcie", address, values))
        return out

    # An idle GPU at 2.5 GT/s keeps its width: no warning, first run or later.
    idle = {"gpu006/gpu": {"link_speed_gts": 2.5}}
    send(ada, T0, devices(**idle))
    assert check(cluster, "pcie", T0 + dt.timedelta(seconds=5))["pass"] == 4
    send(ada, T0 + MINUTE, devices(**{"gpu006/gpu": {"link_speed_gts": 2.5, "link_width": 8}}))
    check(cluster, "pcie", T0 + MINUTE + dt.timedelta(seconds=5))
    x8 = CheckResult.objects.get(kind="pcie", target="pcie:gpu006/0000:17:00.0")
    assert x8.status == "warn" and "link x8 of x16" in x8.message
    warning = Incident.objects.get()
    assert (warning.category, warning.severity, warning.interrupts_job) == ("gpu", "sev3", False)
    assert state("gpu006") == "suspect"
    # The NIC of gpu001 (in the job) reports a fatal AER error: a nic sev2 on the job.
    fatal = {"gpu001/nic": {"aer_fatal_total": 1}, "gpu006/gpu": {"link_width": 8}}
    send(ada, T0 + 2 * MINUTE, devices(**fatal))
    counts = check(cluster, "pcie", T0 + 2 * MINUTE + dt.timedelta(seconds=5))
    assert (counts["fail"], counts["warn"]) == (1, 1)
    nic = Incident.objects.get(category="nic")
    assert (nic.severity, nic.interrupts_job, nic.job) == ("sev2", True, job)
    assert "PCIe device 0000:3a:00.0" in nic.title
    assert state("gpu001") == "drained"


def test_a_drifting_clock_warns_naming_its_offset_an_unsynced_one_on_its_second_run(
    ada, cluster, nodes
):
    send(ada, T0, [("gpu002", "clock", "system", {"offset_s": 3.25, "synced": 1})])
    send(ada, T0, [("gpu003", "clock", "system", {"offset_s": 0.001, "synced": 0})])
    check(cluster, "clock", T0 + dt.timedelta(seconds=5))
    drift = CheckResult.objects.get(kind="clock", target="clock:gpu002")
    assert drift.status == "warn" and "offset +3.25 s" in drift.message
    assert "may be refused" in drift.message
    incident = Incident.objects.get()
    assert (incident.category, incident.severity, incident.interrupts_job) == (
        "other",
        "sev3",
        False,
    )
    assert state("gpu002") == "healthy"
    assert CheckResult.objects.get(target="clock:gpu003").status == "pass"
    # Through the command line, as an operator runs it: the second run in a row unsynced.
    out = StringIO()
    call_command("run_checks", "--cluster", "c1", "--check", "clock", stdout=out)
    unsynced = CheckResult.objects.get(target="clock:gpu003")
    assert unsynced.status == "warn" and "not synchronised in 2 runs in a row" in unsynced.message
    assert "clock:gpu003" in out.getvalue()


def test_the_health_page_says_each_host_check_is_not_monitored_until_fed(ada, client, users, nodes):
    client.force_login(users["otto"])
    html = client.get("/health/?cluster=c1").content.decode()
    plugins = (host_memory, pcie, clock)
    for plugin in plugins:
        row = unescape(next(r for r in html.split("<tr>") if f"<td>{plugin.LABEL}</td>" in r))
        assert "Not monitored" in row and str(plugin.NOT_MONITORED) in row
    # A cluster read by node_exporter alone: memory and the clock, never PCIe.
    at = timezone.now() - MINUTE
    send(ada, at, [("gpu000", "memory", "mc0", {"ce_total": 0, "ue_total": 0})])
    send(ada, at, [("gpu000", "clock", "system", {"offset_s": 0.0, "synced": 1})])
    html = client.get("/health/?cluster=c1").content.decode()
    for plugin, watched in ((host_memory, True), (pcie, False), (clock, True)):
        row = next(r for r in html.split("<tr>") if f"<td>{plugin.LABEL}</td>" in r)
        assert ("Not monitored" not in row) is watched, plugin.KIND


def test_a_passing_mount_or_clock_whose_figures_move_is_not_rewritten(api, ada, cluster, nodes):
    """A pass names no live figure (docs/checks.md, `storage`, `clock`): a mount whose free
    space moves and a clock whose offset moves, both still passing, keep the result their
    first run wrote; a mount that runs short is rewritten at once, with its figures."""
    response = api("root").patch(
        "/api/v1/clusters/c1/", {"required_mounts": ["/checkpoints"]}, format="json"
    )
    assert response.status_code == 200, response.content

    def readings(avail_tib: float, offset: float) -> list[tuple[str, str, str, dict]]:
        disk = {"device": "nas01:/ckpt", "readonly": 0, "device_error": 0}
        size = {"size_bytes": 100 * 2**40, "avail_bytes": avail_tib * 2**40}
        return [
            ("gpu000", "filesystem", "/checkpoints", {**disk, **size}),
            ("gpu000", "clock", "system", {"offset_s": offset, "synced": 1}),
        ]

    def stored() -> dict[str, tuple[str, str, int]]:
        return {
            r.kind: (r.status, r.message, r.run_id)
            for r in CheckResult.objects.filter(
                node__hostname="gpu000", kind__in=["storage", "clock"]
            )
        }

    send(ada, T0, readings(40, 0.0012))
    for kind in ("storage", "clock"):
        check(cluster, kind, T0 + dt.timedelta(seconds=5))
    first = stored()
    assert first["storage"][:2] == ("pass", "/checkpoints writable, at least 5% free")
    assert first["clock"][:2] == ("pass", "offset within ±0.5 s, synchronised")
    for minute, (avail, offset) in enumerate([(37.5, -0.0031), (31.25, 0.0007)], start=1):
        send(ada, T0 + minute * MINUTE, readings(avail, offset))
        for kind in ("storage", "clock"):
            check(cluster, kind, T0 + minute * MINUTE + dt.timedelta(seconds=5))
        assert stored() == first  # same words, same run: nothing rewritten
    send(ada, T0 + 3 * MINUTE, readings(2, 0.0009))
    check(cluster, "storage", T0 + 3 * MINUTE + dt.timedelta(seconds=5))
    status, message, run = stored()["storage"]
    assert (status, run != first["storage"][2]) == ("warn", True)
    assert message == "/checkpoints: 2,048.0 GiB of 102,400.0 GiB free (2.0% < 5%)"
