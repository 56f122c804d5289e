"""The host checks' detectors on hand-made readings (docs/checks.md, `host_memory`, `pcie`,
`clock`): growth from the judged reading, a reset, the first run, the hour's growth and the
thresholds."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.health.checks import PLUGINS, Limits
from apps.health.detectors.clock import clock
from apps.health.detectors.findings import TARGET_TYPES, target_part
from apps.health.detectors.host_counters import HostHistory, growth, hourly
from apps.health.detectors.host_memory import host_memory
from apps.health.detectors.pcie import pcie

T0 = dt.datetime(2026, 5, 1, 12, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)
LIMITS = Limits()


def mc(values: dict, judged: dict | None = None, *, grew: dict | None = None) -> HostHistory:
    return HostHistory(
        node="h01",
        subject="mc0",
        at=T0,
        values=values,
        judged_at=None if judged is None else T0 - MINUTE,
        judged=judged or {},
        grew=grew or {},
    )


def test_the_first_run_passes_whatever_the_counts():
    (finding,) = host_memory([mc({"ce_total": 5000, "ue_total": 3})], limits=LIMITS, now=T0)
    assert finding.status == "pass" and "first reading" in finding.message
    assert finding.target == "mc:h01/mc0"


def test_uncorrectable_growth_fails_and_drains():
    history = mc({"ce_total": 0, "ue_total": 3}, {"ce_total": 0, "ue_total": 2})
    (finding,) = host_memory([history], limits=LIMITS, now=T0)
    assert finding.status == "fail" and "ue_total +1" in finding.message
    assert (finding.category, finding.severity, finding.interrupts_job) == (
        "host_memory",
        "sev2",
        True,
    )
    assert finding.node_state == "drained" and finding.node == "h01"


def test_a_counter_that_went_down_was_reset_never_an_error():
    history = mc({"ce_total": 1, "ue_total": 0}, {"ce_total": 900, "ue_total": 4})
    assert growth(history, "ue_total") == 0 and growth(history, "ce_total") == 0
    (finding,) = host_memory([history], limits=LIMITS, now=T0)
    assert finding.status == "pass" and finding.message == "within limits"


def test_correctable_errors_warn_above_their_rate_within_the_hour():
    # 101 in one interval: over 100 within the hour.
    over = mc({"ce_total": 101, "ue_total": 0}, {"ce_total": 0, "ue_total": 0})
    (finding,) = host_memory([over], limits=LIMITS, now=T0)
    assert finding.status == "warn"
    assert finding.message == "101 correctable memory errors within an hour > 100"
    assert (finding.category, finding.severity, finding.node_state) == (
        "host_memory",
        "sev3",
        "suspect",
    )
    # Exactly 100 does not; growth kept from earlier runs adds up, older than an hour does not.
    at_limit = mc({"ce_total": 100, "ue_total": 0}, {"ce_total": 0, "ue_total": 0})
    assert host_memory([at_limit], limits=LIMITS, now=T0)[0].status == "pass"
    earlier = {"ce_total": ((T0 - 30 * MINUTE, 60.0), (T0 - 90 * MINUTE, 500.0))}
    summed = mc({"ce_total": 50, "ue_total": 0}, {"ce_total": 9, "ue_total": 0}, grew=earlier)
    total, kept = hourly(summed, "ce_total", T0)
    assert total == 101 and kept == [[(T0 - 30 * MINUTE).isoformat(), 60.0], [T0.isoformat(), 41]]
    (finding,) = host_memory([summed], limits=LIMITS, now=T0)
    assert finding.status == "warn" and finding.details["grew"] == {"ce_total": kept}
    # A cluster's own threshold is read.
    lenient = Limits(host_ce_per_hour=1000)
    assert host_memory([summed], limits=lenient, now=T0)[0].status == "pass"


def test_a_reading_missing_a_counter_says_so():
    (finding,) = host_memory([mc({"ce_total": 3}, {"ce_total": 3})], limits=LIMITS, now=T0)
    assert finding.status == "pass" and "not checked: ue_total" in finding.message


def dev(role: str, values: dict, judged: dict | None = None) -> HostHistory:
    return HostHistory(
        node="h02",
        subject="0000:17:00.0",
        at=T0,
        values={"role": role, **values},
        judged_at=None if judged is None else T0 - MINUTE,
        judged=judged or {},
    )


FULL = {"link_width": 16, "max_link_width": 16, "link_speed_gts": 32, "max_link_speed_gts": 32}
AER = {"aer_correctable_total": 0, "aer_nonfatal_total": 0, "aer_fatal_total": 0}


@pytest.mark.parametrize(
    ("role", "category"), [("gpu", "gpu"), ("nic", "nic"), ("bridge", "io_expansion_board")]
)
def test_aer_fatal_growth_fails_with_the_devices_category(role, category):
    history = dev(role, {**FULL, **AER, "aer_fatal_total": 2}, {**AER, "aer_fatal_total": 1})
    (finding,) = pcie([history], limits=LIMITS, now=T0)
    assert finding.status == "fail" and "AER fatal errors +1" in finding.message
    assert (finding.category, finding.severity, finding.interrupts_job) == (category, "sev2", True)
    assert finding.node_state == "drained" and finding.target == "pcie:h02/0000:17:00.0"


def test_a_link_below_its_width_warns_an_idle_gpus_lower_speed_does_not():
    x8 = dev("gpu", {**FULL, **AER, "link_width": 8}, AER)
    (finding,) = pcie([x8], limits=LIMITS, now=T0)
    assert finding.status == "warn" and "link x8 of x16" in finding.message
    assert (finding.category, finding.severity, finding.node_state) == ("gpu", "sev3", "suspect")
    idle = dev("gpu", {**FULL, **AER, "link_speed_gts": 2.5}, AER)
    assert pcie([idle], limits=LIMITS, now=T0)[0].status == "pass"
    slow_nic = dev("nic", {**FULL, **AER, "link_speed_gts": 16}, AER)
    (finding,) = pcie([slow_nic], limits=LIMITS, now=T0)
    assert finding.status == "warn" and "link 16 of 32 GT/s" in finding.message
    assert finding.category == "nic"
    # Another device's link is not judged; its first run passes too.
    assert pcie([dev("bridge", {**FULL, "link_width": 4})], limits=LIMITS, now=T0)[0].status == (
        "pass"
    )


def test_aer_nonfatal_growth_and_correctable_rate_warn_a_reset_is_silent():
    nonfatal = dev("nic", {**FULL, **AER, "aer_nonfatal_total": 1}, AER)
    (finding,) = pcie([nonfatal], limits=LIMITS, now=T0)
    assert finding.status == "warn" and "AER non-fatal errors +1" in finding.message
    noisy = dev("gpu", {**FULL, **AER, "aer_correctable_total": 150}, AER)
    (finding,) = pcie([noisy], limits=LIMITS, now=T0)
    assert finding.status == "warn" and "150 AER correctable errors within an hour > 100" in (
        finding.message
    )
    reset = dev("gpu", {**FULL, **AER}, {**AER, "aer_fatal_total": 9, "aer_nonfatal_total": 4})
    assert pcie([reset], limits=LIMITS, now=T0)[0].status == "pass"


def tick(values: dict, runs: int = 0) -> HostHistory:
    return HostHistory(node="h03", subject="system", at=T0, values=values, runs=runs)


def test_a_clock_warns_on_its_offset_naming_it():
    (finding,) = clock([tick({"offset_s": -2.5, "synced": 1})], limits=LIMITS)
    assert finding.status == "warn" and "offset -2.5 s" in finding.message
    assert "may be refused" in finding.message and finding.target == "clock:h03"
    assert (finding.category, finding.severity, finding.node_state) == ("other", "sev3", None)
    assert clock([tick({"offset_s": 0.5, "synced": 1})], limits=LIMITS)[0].status == "pass"
    assert clock([tick({"offset_s": 0.4})], limits=Limits(clock_max_offset_s=0.1))[0].status == (
        "warn"
    )


def test_an_unsynchronised_clock_warns_on_its_second_run_in_a_row():
    first = clock([tick({"offset_s": 0.01, "synced": 0})], limits=LIMITS)[0]
    assert first.status == "pass" and first.details["unsynced_runs"] == 1
    second = clock([tick({"offset_s": 0.01, "synced": 0}, runs=1)], limits=LIMITS)[0]
    assert second.status == "warn" and "not synchronised in 2 runs in a row" in second.message
    again = clock([tick({"offset_s": 0.01, "synced": 1}, runs=5)], limits=LIMITS)[0]
    assert again.status == "pass" and again.details["unsynced_runs"] == 0


def test_host_targets_are_worded_in_titles():
    assert target_part("mc:h01/mc0") == ("h01", "memory controller mc0")
    assert target_part("pcie:h01/0000:17:00.0") == ("h01", "PCIe device 0000:17:00.0")
    assert target_part("clock:h01") == ("h01", "clock")
    assert target_part("node:h01") is None and target_part("gpu:h01") is None


def test_every_target_type_is_declared_with_its_words():
    """Every check's target is a declared target type (tests/health/test_plugins.py); the
    host ones are worded."""
    assert all(TARGET_TYPES[spec.target.prefix] is spec.target for spec in PLUGINS)
    assert TARGET_TYPES["clock"].one_per_node and not TARGET_TYPES["mc"].one_per_node
