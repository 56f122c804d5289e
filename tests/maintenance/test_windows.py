"""A window's life (docs/maintenance.md): its nodes go to `maintenance` at its start and back to
the state they had at its end — unless someone changed them meanwhile; the beat task starts
and ends windows; a job it stops is a planned interruption, planned in the reports."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Node, NodeStateChange
from apps.fleet.services import node_set_state
from apps.incidents.models import Incident
from apps.maintenance.models import MaintenanceWindow, WindowNode
from apps.maintenance.services import window_end, windows_tick
from apps.maintenance.tasks import maintenance_tick
from tests.maintenance.conftest import book

pytestmark = pytest.mark.django_db


def state(host: str) -> str:
    return Node.objects.get(hostname=host).state


def test_start_and_end_put_nodes_in_maintenance_and_give_back_their_state(cluster, fleet):
    node_set_state(node=fleet["nodes"][5], state="suspect", reason="slow", by="otto")
    # Times stay within the 5 minutes ahead a state change may be stamped (no clock mocking).
    start = timezone.now() + dt.timedelta(minutes=1)
    window = book(cluster, "n[05-06]", start=start, minutes=2)
    assert (state("n05"), state("n06")) == ("suspect", "healthy")  # not yet
    assert windows_tick(now=start - dt.timedelta(seconds=1)) == {"started": 0, "ended": 0}
    assert windows_tick(now=start + dt.timedelta(seconds=20)) == {"started": 1, "ended": 0}
    for host in ("n05", "n06"):
        node = Node.objects.get(hostname=host)
        change = node.state_changes.first()
        assert node.state == "maintenance"
        assert (change.source, change.at, change.by) == ("maintenance", start, "otto")
        assert change.reason == f"maintenance window #{window.pk}: firmware upgrade"
    assert state("n07") == "healthy"  # no other node
    assert windows_tick(now=start + dt.timedelta(seconds=50)) == {"started": 0, "ended": 0}
    end = window.end
    assert windows_tick(now=end + dt.timedelta(seconds=1)) == {"started": 0, "ended": 1}
    assert (state("n05"), state("n06")) == ("suspect", "healthy")
    back = NodeStateChange.objects.filter(node__hostname="n06").first()
    assert (back.source, back.at, back.reason) == (
        "maintenance",
        end,
        f"maintenance window #{window.pk} ended",
    )
    window.refresh_from_db()
    assert window.status == "ended" and set(
        WindowNode.objects.filter(window=window).values_list("restored", flat=True)
    ) == {True}
    assert windows_tick(now=end + dt.timedelta(minutes=1)) == {"started": 0, "ended": 0}


def test_a_node_someone_changed_meanwhile_keeps_their_state(cluster, fleet):
    window = book(cluster, ["n08", "n09"])
    assert state("n08") == state("n09") == "maintenance"
    node_set_state(node=Node.objects.get(hostname="n09"), state="drained", reason="bad DIMM")
    window_end(window=window, by="otto")
    assert (state("n08"), state("n09")) == ("healthy", "drained")
    assert dict(
        WindowNode.objects.filter(window=window).values_list("node__hostname", "restored")
    ) == {
        "n08": True,
        "n09": False,
    }


def test_a_window_wholly_missed_by_the_tick_is_recorded_and_over(cluster, fleet):
    start = timezone.now() + dt.timedelta(minutes=1)
    window = book(cluster, "n10", start=start, minutes=2)
    windows_tick(now=start + dt.timedelta(minutes=3))  # the beat was down through it
    window.refresh_from_db()
    assert window.status == "ended" and state("n10") == "healthy"
    assert list(
        NodeStateChange.objects.filter(node__hostname="n10", source="maintenance")
        .order_by("at")
        .values_list("state", flat=True)
    ) == ["maintenance", "healthy"]


def test_the_beat_task_runs_the_tick(cluster, fleet):
    now = timezone.now()
    book(cluster, "n11", start=now + dt.timedelta(minutes=1), minutes=1)
    assert maintenance_tick() == {"started": 0, "ended": 0}
    # As if time passed: due now, and the next one over.
    MaintenanceWindow.objects.update(
        start=now - dt.timedelta(minutes=2), end=now + dt.timedelta(minutes=1)
    )
    assert maintenance_tick() == {"started": 1, "ended": 0}
    assert state("n11") == "maintenance"
    MaintenanceWindow.objects.update(end=now - dt.timedelta(seconds=1))
    assert maintenance_tick() == {"started": 0, "ended": 1}
    assert state("n11") == "healthy"


def test_a_job_on_the_window_s_nodes_gets_a_planned_interruption(cluster, fleet, api):
    start = timezone.now() + dt.timedelta(minutes=1)
    window = book(cluster, "n[03-05]", start=start)
    assert not Incident.objects.exists()
    windows_tick(now=start)
    incident = Incident.objects.get()
    assert incident.planned and incident.interrupts_job
    assert (incident.category, incident.job, incident.severity) == (
        "host_maintenance",
        fleet["job"],
        "sev4",
    )
    assert incident.occurred_at == start
    assert list(incident.nodes.values_list("hostname", flat=True)) == ["n03"]  # the job's only
    end = start + dt.timedelta(minutes=2)
    window_end(window=window, now=end)
    incident.refresh_from_db()
    assert incident.recovered_at == end and incident.status == "resolved"
    j = api("mia").get(f"/api/v1/jobs/{fleet['job'].pk}/").json()
    assert j["condition"] == "ok"


def test_no_job_no_interruption(cluster, fleet):
    book(cluster, "n[06-07]")
    assert not Incident.objects.exists()


def test_the_weekly_report_counts_it_planned_and_availability_counts_maintenance_out(
    cluster, fleet, api
):
    now = timezone.now()
    start = now - dt.timedelta(minutes=4)
    window = book(cluster, "n00", start=start)
    window_end(window=window, now=now, by="otto")
    year, week, _ = now.isocalendar()
    mia = api("mia")
    weekly = mia.get(f"/api/v1/reports/weekly/?cluster=c1&week={year}-W{week:02d}").json()
    lost = weekly["lost_gpu_hours"]
    assert lost["downtime"] == 0 and lost["rework"] == 0
    assert lost["planned"] == pytest.approx(32 * 4 / 60, rel=1e-3)  # the job's 32 GPUs, 4 min
    assert weekly["interruptions"] == 0  # a planned one is no failure
    w0 = (now - dt.timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    w1 = now.isoformat().replace("+00:00", "Z")
    rel = mia.get(f"/api/v1/reports/reliability/?cluster=c1&start={w0}").json()
    assert (rel["interruptions"], rel["planned_interruptions"]) == (0, 1)
    avail = mia.get(f"/api/v1/reports/availability/?cluster=c1&start={w0}&end={w1}").json()
    by_node = {row["hostname"]: row for row in avail["by_node"]}
    assert by_node["n00"]["availability"] == pytest.approx(56 / 60, rel=1e-3)
    assert by_node["n01"]["availability"] == 1
    assert avail["availability"] == pytest.approx(1 - 4 / 60 / 12, rel=1e-3)
