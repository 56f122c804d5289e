"""The `fabric` check's pure detector (docs/checks.md, `fabric`), without a database: each row
of its table, counter resets, rates over the interval, and the escalation of repeated warns."""

from __future__ import annotations

import datetime as dt

from apps.health.detectors.fabric import JUDGED, PortHistory, PortReading, fabric, port_target
from apps.health.limits import Limits

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)
L = Limits()
IN_SERVICE = {"n1"}


def port(before: dict[str, float], after: dict[str, float], **kw: object) -> PortHistory:
    """One port of n1 read a minute apart, ACTIVE both times unless `states` says otherwise."""
    states = kw.pop("states", ("ACTIVE", "ACTIVE"))
    assert isinstance(states, tuple)
    return PortHistory(
        node="n1",
        port="mlx5_0/1",
        previous=PortReading(NOW - MINUTE, states[0], before),
        latest=PortReading(NOW, states[1], after),
        **kw,  # type: ignore[arg-type]
    )


def judge(history: PortHistory) -> tuple[str, str]:
    (finding,) = fabric([history], limits=L, in_service=IN_SERVICE, now=NOW)
    assert finding.target == port_target("n1", "mlx5_0/1") == "port:n1/mlx5_0/1"
    return finding.status.value, finding.message


def test_a_fatal_counter_that_grew_fails_and_drains():
    status, message = judge(port({"link_downed": 3}, {"link_downed": 4}))
    assert status == "fail" and "link_downed +1" in message
    (finding,) = fabric(
        [port({"link_downed": 3}, {"link_downed": 4})], limits=L, in_service=set(), now=NOW
    )
    assert finding.outcome.category == "nic" and finding.outcome.node_state == "drained"
    assert finding.interrupts_job


def test_a_port_that_left_active_fails_only_on_a_node_in_service():
    history = port({}, {}, states=("ACTIVE", "DOWN"))
    assert judge(history) == ("fail", "port mlx5_0/1: was ACTIVE, now DOWN")
    (quiet,) = fabric([history], limits=L, in_service=set(), now=NOW)  # drained already: no finding
    assert quiet.status == "pass"
    assert judge(port({}, {}, states=("DOWN", "DOWN")))[0] == "pass"  # never was ACTIVE


def test_a_counter_that_went_down_was_reset_never_an_error():
    status, message = judge(port({"link_downed": 9, "symbol_error": 10**6}, {"link_downed": 0}))
    assert status == "pass" and message.startswith("within limits")


def test_what_the_source_does_not_report_is_said_not_passed():
    every = dict.fromkeys(JUDGED, 0)
    assert judge(port(every, every)) == ("pass", "within limits")
    hw_counters = ("rnr_nak_retry_err", "local_ack_timeout_err")
    node_exporter = {k: 0 for k in JUDGED if k not in hw_counters}
    (finding,) = fabric(
        [port(node_exporter, node_exporter)], limits=L, in_service=IN_SERVICE, now=NOW
    )
    assert finding.message == (
        "within limits (not reported, not checked: local_ack_timeout_err, rnr_nak_retry_err)"
    )
    assert finding.details["not_reported"] == ["local_ack_timeout_err", "rnr_nak_retry_err"]


def test_rates_are_growth_over_the_seconds_between_readings():
    assert judge(port({"link_error_recovery": 0}, {"link_error_recovery": 5}))[0] == "pass"
    status, message = judge(port({"link_error_recovery": 0}, {"link_error_recovery": 6}))
    assert status == "warn" and "link error recoveries 6/min > 5" in message
    # symbol errors: 10/s is the limit, 601 in 60 s is over it
    assert judge(port({"symbol_error": 0}, {"symbol_error": 600}))[0] == "pass"
    assert judge(port({"symbol_error": 0}, {"symbol_error": 601}))[0] == "warn"
    assert judge(port({"port_xmit_discards": 0}, {"port_xmit_discards": 6001}))[0] == "warn"
    assert judge(port({"local_ack_timeout_err": 0}, {"local_ack_timeout_err": 61}))[0] == "warn"
    (warn,) = fabric(
        [port({"port_rcv_errors": 0}, {"port_rcv_errors": 700})],
        limits=L,
        in_service=IN_SERVICE,
        now=NOW,
    )
    assert warn.outcome.node_state == "suspect" and not warn.interrupts_job


def test_the_third_warning_within_an_hour_fails():
    flapping = ({"link_error_recovery": 0}, {"link_error_recovery": 60})
    once = (NOW - 50 * MINUTE,)
    assert judge(port(*flapping, warned_at=once))[0] == "warn"
    twice = (NOW - 50 * MINUTE, NOW - 10 * MINUTE)
    status, message = judge(port(*flapping, warned_at=twice))
    assert status == "fail" and "3 warnings within an hour" in message
    (finding,) = fabric(
        [port(*flapping, warned_at=twice)], limits=L, in_service=IN_SERVICE, now=NOW
    )
    assert finding.details["warns"] == 3 and finding.details["warned_at"][-1] == NOW.isoformat()
    # warnings older than an hour no longer count, and a pass carries the hour's forward
    stale = (NOW - 70 * MINUTE, NOW - 61 * MINUTE)
    assert judge(port(*flapping, warned_at=stale))[0] == "warn"
    (quiet,) = fabric([port({}, {}, warned_at=twice)], limits=L, in_service=IN_SERVICE, now=NOW)
    assert quiet.status == "pass" and quiet.details["warns"] == 2


def test_rnr_nak_retries_warn_by_rate_and_never_drain():
    assert judge(port({"rnr_nak_retry_err": 0}, {"rnr_nak_retry_err": 60}))[0] == "pass"
    (finding,) = fabric(
        [port({"rnr_nak_retry_err": 0}, {"rnr_nak_retry_err": 61})],
        limits=L,
        in_service=IN_SERVICE,
        now=NOW,
    )
    assert finding.status == "warn" and "RNR NAK retries" in finding.message
    assert finding.outcome.node_state == "suspect"


def test_a_port_without_readings_for_two_runs_while_its_node_reports_is_down():
    quiet = port({"link_downed": 0}, {"link_downed": 0}, missing_runs=1)
    assert judge(quiet)[0] == "pass"
    status, message = judge(port({}, {}, missing_runs=2))
    assert status == "fail" and message == "port mlx5_0/1: was ACTIVE, now no reading"


def test_a_failing_port_names_the_switch_at_its_far_end():
    history = port({"link_downed": 0}, {"link_downed": 1}, switch="leaf-07", switch_nodes=4)
    (finding,) = fabric([history], limits=L, in_service=IN_SERVICE, now=NOW)
    assert (finding.component, finding.component_size) == ("switch:leaf-07", 4)
    assert finding.details["switch"] == "leaf-07"
    (unknown,) = fabric(
        [port({"link_downed": 0}, {"link_downed": 1})], limits=L, in_service=IN_SERVICE, now=NOW
    )
    assert unknown.component == ""


def test_one_reading_is_never_a_finding():
    first = PortHistory("n1", "mlx5_0/1", PortReading(NOW, "ACTIVE", {"link_downed": 7}))
    assert judge(first)[0] == "pass" and judge(first)[1].startswith("within limits")


def test_thresholds_are_the_clusters_own():
    strict = Limits(fabric_flaps_per_min=1)
    (finding,) = fabric(
        [port({"link_error_recovery": 0}, {"link_error_recovery": 2})],
        limits=strict,
        in_service=IN_SERVICE,
        now=NOW,
    )
    assert finding.status == "warn"
