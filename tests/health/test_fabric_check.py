"""The `fabric` check run on stored ports (docs/checks.md, `fabric`): readings posted to the
telemetry intake, runs executed as the worker executes them, and what they change — results,
incidents, node states. A downed link drains its node with one `nic` incident and keeps
failing while it is down; a flapping link warns and its third warning within an hour fails;
a reset is silent; a port that stops reporting while its node's other ports report fails on
its second silent run; a bad leaf switch is one incident naming its nodes; the drain cap holds."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Node
from apps.health.models import CheckResult, CheckRun
from apps.health.services import run_execute
from apps.incidents.models import Incident
from apps.telemetry.models import Port

pytestmark = pytest.mark.django_db

T0 = timezone.now().replace(microsecond=0) - dt.timedelta(hours=2)
MINUTE = dt.timedelta(minutes=1)
ACTIVE = {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate_gbps": 400}
ZERO = {"link_downed": 0, "link_error_recovery": 0, "symbol_error": 0}


def send(client, at: dt.datetime, ports: dict[tuple[str, str], dict[str, object]]) -> None:  # noqa: ANN001
    """Post one reading per (node, device) at `at`: ACTIVE with zero counters unless told."""
    body = {
        "ports": [
            {
                "node": node,
                "device": device,
                "port": 1,
                "ts": at.isoformat(),
                **({"switch": str(metrics.pop("switch"))} if "switch" in metrics else {}),
                "metrics": {**ACTIVE, **ZERO, **metrics},
            }
            for (node, device), given in ports.items()
            for metrics in (dict(given),)
        ]
    }
    response = client.post("/api/v1/ingest/telemetry/", body, format="json")
    assert response.status_code == 202, response.content


def check(cluster, at: dt.datetime) -> dict[str, int]:  # noqa: ANN001
    """One fabric run at `at`, as the worker runs it; its counts."""
    run = CheckRun.objects.create(cluster=cluster, kind="fabric", requested_by="test")
    done = run_execute(run_id=run.pk, now=at)
    assert done is not None and done.status == "done", done and done.error
    return done.counts


def result(host: str, device: str = "mlx5_0") -> CheckResult:
    return CheckResult.objects.get(kind="fabric", target=f"port:{host}/{device}/1")


def state(host: str) -> str:
    return Node.objects.get(hostname=host).state


@pytest.fixture
def ada(api):  # noqa: ANN001, ANN201
    return api("ada")


def four_ports() -> dict[tuple[str, str], dict[str, object]]:
    return {(f"gpu00{i}", d): {} for i in (0, 1) for d in ("mlx5_0", "mlx5_1")}


def test_a_downed_link_drains_with_one_nic_incident_a_reset_is_silent_a_flap_warns(
    ada, cluster, nodes
):
    send(ada, T0, four_ports())
    assert check(cluster, T0 + 5 * dt.timedelta(seconds=1))["pass"] == 4  # first run: passes
    ports = four_ports()
    ports[("gpu000", "mlx5_0")] = {"state": "1: DOWN", "link_downed": 1}
    ports[("gpu001", "mlx5_0")] = {"link_downed": 0, "symbol_error": 0}
    send(ada, T0 + MINUTE, ports)
    counts = check(cluster, T0 + MINUTE + dt.timedelta(seconds=5))
    assert (counts["fail"], counts["warn"], counts["pass"]) == (1, 0, 3)
    failed = result("gpu000")
    assert failed.status == "fail"
    assert failed.message == "port mlx5_0/1: was ACTIVE, now DOWN, link_downed +1"
    (incident,) = Incident.objects.all()
    assert (incident.category, incident.severity) == ("nic", "sev2")
    assert [n.hostname for n in incident.nodes.all()] == ["gpu000"]
    assert incident.title == "Fabric (NIC ports): gpu000 — port mlx5_0/1"  # what to blame
    assert state("gpu000") == "drained" and state("gpu001") == "healthy"
    # Still down a minute later: no new incident, the node stays drained, the result says
    # why (its node is now out of service) instead of "within limits".
    ports[("gpu000", "mlx5_0")] = {"state": "1: DOWN", "link_downed": 1}
    send(ada, T0 + 2 * MINUTE, ports)
    check(cluster, T0 + 2 * MINUTE + dt.timedelta(seconds=5))
    assert Incident.objects.count() == 1
    assert result("gpu000").message.startswith("DOWN (node not in service)")
    # A reset (counters that went down) is silent; a flapping link warns.
    ports = four_ports()
    ports[("gpu000", "mlx5_0")] = {"state": "1: DOWN", "link_downed": 0}
    ports[("gpu001", "mlx5_1")] = {"link_error_recovery": 10}
    send(ada, T0 + 3 * MINUTE, ports)
    counts = check(cluster, T0 + 3 * MINUTE + dt.timedelta(seconds=5))
    assert (counts["fail"], counts["warn"]) == (0, 1)
    flap = result("gpu001", "mlx5_1")
    assert flap.status == "warn" and "link error recoveries 10/min > 5" in flap.message
    warning = Incident.objects.exclude(pk=incident.pk).get()
    assert (warning.category, warning.severity) == ("nic", "sev3")
    assert state("gpu001") == "suspect"


def test_the_third_warning_within_an_hour_fails(ada, cluster, nodes):
    flapping = {("gpu002", "mlx5_0"): {"link_error_recovery": 0}}
    send(ada, T0, flapping)
    check(cluster, T0 + dt.timedelta(seconds=5))
    statuses = []
    for i in range(1, 4):
        at = T0 + i * 10 * MINUTE
        send(ada, at, {("gpu002", "mlx5_0"): {"link_error_recovery": 100 * i}})
        check(cluster, at + dt.timedelta(seconds=5))
        statuses.append(result("gpu002").status)
    assert statuses == ["warn", "warn", "fail"]
    assert "3 warnings within an hour" in result("gpu002").message
    assert state("gpu002") == "drained"
    # No job runs there: the warning's incident is the failure's, raised to sev2
    (incident,) = Incident.objects.all()
    assert (incident.category, incident.severity) == ("nic", "sev2")
    assert incident.timeline.filter(text__contains="severity: sev3 → sev2").exists()
    # Quiet for over an hour: the old warnings no longer count, a new flap only warns.
    at = T0 + 100 * MINUTE
    send(ada, at, {("gpu002", "mlx5_0"): {"link_error_recovery": 300}})
    check(cluster, at + dt.timedelta(seconds=5))
    at += 10 * MINUTE
    send(ada, at, {("gpu002", "mlx5_0"): {"link_error_recovery": 400}})
    check(cluster, at + dt.timedelta(seconds=5))
    assert result("gpu002").details["warns"] == 1


def test_a_port_that_stops_reporting_while_its_node_reports_fails_on_its_second_run(
    ada, cluster, nodes
):
    both = {("gpu003", "mlx5_0"): {}, ("gpu003", "mlx5_1"): {}}
    send(ada, T0, both)
    check(cluster, T0 + dt.timedelta(seconds=5))
    for i, expected in ((1, "pass"), (2, "fail")):
        at = T0 + i * MINUTE
        send(ada, at, {("gpu003", "mlx5_1"): {}})  # mlx5_0 is silent, its node is not
        check(cluster, at + dt.timedelta(seconds=5))
        assert result("gpu003").status == expected
    assert result("gpu003").message == "port mlx5_0/1: was ACTIVE, now no reading"
    assert result("gpu003", "mlx5_1").status == "pass"
    # A node all of whose ports fall silent (its agent stopped) is the heartbeat's to judge:
    # none of its ports is "missing", however long, whatever else it still reports.
    send(ada, T0, {("gpu005", "mlx5_0"): {}, ("gpu005", "mlx5_1"): {}})
    check(cluster, T0 + 3 * MINUTE)
    for i in (4, 5, 6):
        check(cluster, T0 + i * MINUTE)
    assert {result("gpu005", d).status for d in ("mlx5_0", "mlx5_1")} == {"pass"}


def test_a_bad_leaf_switch_is_one_incident_naming_its_nodes(ada, cluster, nodes):
    """Four nodes' first ports are cabled to leaf-07, the other four's to leaf-08; three of
    leaf-07's ports go down in one run: one `network_switch_cable` incident for the switch,
    not three `nic` ones, and the drain cap (1 node an hour on 8 nodes) holds."""
    ports = {
        (f"gpu00{i}", "mlx5_0"): {"switch": "leaf-07" if i < 4 else "leaf-08"} for i in range(8)
    }
    send(ada, T0, ports)
    check(cluster, T0 + dt.timedelta(seconds=5))
    for i in range(3):
        ports[(f"gpu00{i}", "mlx5_0")] = {"switch": "leaf-07", "state": "1: DOWN"}
    send(ada, T0 + MINUTE, ports)
    counts = check(cluster, T0 + MINUTE + dt.timedelta(seconds=5))
    assert counts["fail"] == 3 and counts["incidents_opened"] == 1
    (incident,) = Incident.objects.all()
    assert incident.category == "network_switch_cable"
    assert incident.details["component"] == "switch:leaf-07"
    assert incident.details["component_nodes"] == 4
    assert sorted(n.hostname for n in incident.nodes.all()) == ["gpu000", "gpu001", "gpu002"]
    assert Node.objects.filter(state="drained").count() == 1  # the drain cap
    assert result("gpu000").details["switch"] == "leaf-07"


def test_a_port_in_a_state_the_kernel_adds_is_not_active(ada, cluster, nodes):
    """`5: ACTIVE_DEFER` (issue 41) was a 400 refusing the batch, so the port kept its last
    ACTIVE reading: it is stored by its name and the check counts it as not ACTIVE, as it
    would a DOWN port, while the batch's other ports pass."""
    send(ada, T0, four_ports())
    check(cluster, T0 + dt.timedelta(seconds=5))
    ports = four_ports()
    ports[("gpu000", "mlx5_0")] = {"state": "5: ACTIVE_DEFER"}
    send(ada, T0 + MINUTE, ports)
    counts = check(cluster, T0 + MINUTE + dt.timedelta(seconds=5))
    assert (counts["fail"], counts["pass"]) == (1, 3)
    assert result("gpu000").message == "port mlx5_0/1: was ACTIVE, now ACTIVE_DEFER"
    assert Port.objects.get(node__hostname="gpu000", device="mlx5_0").judged_state == "ACTIVE"
    assert state("gpu000") == "drained"


def test_the_judged_reading_is_written_with_the_findings(ada, cluster, nodes):
    """Growth is measured from the reading the previous run judged: two readings between
    runs add up, and a run that errs judges nothing."""
    send(ada, T0, {("gpu004", "mlx5_0"): {}})
    check(cluster, T0 + dt.timedelta(seconds=5))
    port = Port.objects.get(node__hostname="gpu004")
    assert (port.judged_ts, port.judged_state) == (T0, "ACTIVE")
    send(ada, T0 + MINUTE, {("gpu004", "mlx5_0"): {"symbol_error": 400}})
    send(ada, T0 + 2 * MINUTE, {("gpu004", "mlx5_0"): {"symbol_error": 1300}})
    check(cluster, T0 + 2 * MINUTE + dt.timedelta(seconds=5))
    # 1,300 in 120 s is 10.8/s over the run's interval (the last reading alone: 7.5/s)
    assert result("gpu004").status == "warn"
    assert "symbol errors 10.8/s > 10" in result("gpu004").message
    port.refresh_from_db()
    assert port.judged_ts == T0 + 2 * MINUTE and port.judged_counters["symbol_error"] == 1300


def test_a_cluster_without_ports_runs_and_judges_nothing(cluster, nodes):
    counts = check(cluster, timezone.now())
    assert counts["pass"] == counts["fail"] == counts["warn"] == 0
    assert not CheckResult.objects.filter(kind="fabric").exists()
