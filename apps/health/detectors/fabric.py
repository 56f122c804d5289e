"""`fabric`: NIC ports that went down, lost link integrity or flap (docs/checks.md, `fabric`).

Each port is judged on two readings of its counters (the one the previous run judged and
the latest): a counter that grew is an error, one that went down was reset (never an error),
and a rate is its growth over the seconds between the two readings. A port whose failure is
its far end's (a switch) names that switch, so a bad leaf is one incident (blast radius).
Pure: plain values in, findings out.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from apps.common.words import counted
from apps.fleet.choices import NodeState
from apps.health.detectors.findings import Finding, Outcome, failed, passed, warned
from apps.incidents.choices import Category, Severity

if TYPE_CHECKING:  # the check's thresholds, declared by its plug-in
    from apps.health.checks.fabric import FabricLimits

KIND = "fabric"
DOWN = Outcome(Category.NIC, Severity.SEV2, interrupts_job=True, node_state=NodeState.DRAINED)
DEGRADED = Outcome(Category.NIC, Severity.SEV3, node_state=NodeState.SUSPECT)
# Any growth of these takes the port out of service. (`rnr_nak_retry_err` counts NAKs
# within the retry limit: a rate, on the warn row.)
FATAL_COUNTERS = (
    "link_downed",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
)
# Every counter a row of the check reads.
JUDGED = (
    *FATAL_COUNTERS,
    "link_error_recovery",
    "symbol_error",
    "port_rcv_errors",
    "port_xmit_discards",
    "local_ack_timeout_err",
    "rnr_nak_retry_err",
)
# A port with no new reading for this many runs while its node's other ports send theirs
# is not ACTIVE.
MISSING_RUNS = 2
# Warnings of a port count towards its escalation for this long.
WARNS_WINDOW = dt.timedelta(hours=1)


def port_target(host: str, port: str) -> str:
    """The result target of one NIC port of a node (`port:HOST/mlx5_0/1`)."""
    return f"port:{host}/{port}"


@dataclass(frozen=True)
class PortReading:
    """One port's state and counters at one time."""

    at: dt.datetime
    state: str | None
    counters: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PortHistory:
    """What the check knows of one port: the previous run's reading, the latest, and how many
    times it warned in the last hour before this run."""

    node: str
    port: str  # device/port, e.g. mlx5_0/1
    latest: PortReading
    previous: PortReading | None = None
    # When it warned before this run (older than an hour is dropped).
    warned_at: tuple[dt.datetime, ...] = ()
    # Runs in a row, this one included, without a new reading while its node's other
    # ports sent theirs.
    missing_runs: int = 0
    # The switch at its cable's far end ("" unknown) and how many nodes have a port on it.
    switch: str = ""
    switch_nodes: int = 0


@dataclass(frozen=True)
class FabricPort:
    """One port as stored: its latest reading, the one the check judged last, its node's
    state, and the switch at its cable's far end."""

    pk: int
    node: str
    node_state: str
    port: str  # device/port
    switch: str
    ts: dt.datetime | None
    state: str
    counters: Mapping[str, float]
    judged_ts: dt.datetime | None
    judged_state: str
    judged_counters: Mapping[str, float]


def _growth(history: PortHistory, name: str) -> float:
    """How much counter `name` grew between the two readings (0 after a reset or with one
    reading)."""
    if history.previous is None:
        return 0.0
    now, before = history.latest.counters.get(name), history.previous.counters.get(name)
    if now is None or before is None or now < before:
        return 0.0
    return now - before


def _rates(history: PortHistory, limits: FabricLimits) -> list[str]:
    """The warn rows of the port that hold over the last interval, in words."""
    if history.previous is None:
        return []
    seconds = (history.latest.at - history.previous.at).total_seconds()
    if seconds <= 0:
        return []
    out = []
    flaps = _growth(history, "link_error_recovery") * 60 / seconds
    if flaps > limits.fabric_flaps_per_min:
        out.append(f"link error recoveries {flaps:.3g}/min > {limits.fabric_flaps_per_min:g}")
    per_second = (
        ("symbol_error", "symbol errors", limits.fabric_symbol_errors_per_s),
        ("port_rcv_errors", "receive errors", limits.fabric_rcv_errors_per_s),
        ("port_xmit_discards", "transmit discards", limits.fabric_xmit_discards_per_s),
        ("local_ack_timeout_err", "local ACK timeouts", limits.fabric_ack_timeouts_per_s),
        ("rnr_nak_retry_err", "RNR NAK retries", limits.fabric_rnr_naks_per_s),
    )
    for name, words, limit in per_second:
        rate = _growth(history, name) / seconds
        if rate > limit:
            out.append(f"{words} {rate:.3g}/s > {limit:g}")
    return out


def fabric(
    ports: Sequence[PortHistory], *, limits: FabricLimits, in_service: set[str], now: dt.datetime
) -> list[Finding]:
    """A finding for every port: fail when a port of a node in service left ACTIVE (or sent
    no reading for `MISSING_RUNS` runs while its node's other ports did) or a fatal counter
    grew, or when it warned `fabric_warns_to_fail` times within an hour; warn when a rate
    is over its threshold; else pass. `details.warned_at` keeps the hour's warnings (this
    run's too); a pass names the counters its source does not report."""
    out: list[Finding] = []
    for history in ports:
        target = port_target(history.node, history.port)
        grown = {name: _growth(history, name) for name in FATAL_COUNTERS}
        fatal = [f"{name} +{n:g}" for name, n in grown.items() if n > 0]
        missing = history.missing_runs >= MISSING_RUNS
        state = "no reading" if missing else history.latest.state or "not reported"
        was_active = history.previous is not None and history.previous.state == "ACTIVE"
        left = missing or history.latest.state != "ACTIVE"
        if was_active and left and history.node in in_service:
            fatal.insert(0, f"was ACTIVE, now {state}")
        rates = _rates(history, limits)
        warn_times = [t for t in history.warned_at if now - t < WARNS_WINDOW]
        if rates and not fatal:
            warn_times.append(now)
        details: dict[str, object] = {
            "warns": len(warn_times),
            "missing_runs": history.missing_runs,
        }
        if warn_times:  # only then: the next run reads the results that hold it
            details["warned_at"] = [t.isoformat() for t in warn_times]
        if history.switch:
            details["switch"] = history.switch
        node, where = history.node, f"port {history.port}: "
        far_end = f"switch:{history.switch}" if history.switch else ""
        escalated = bool(rates) and len(warn_times) >= limits.fabric_warns_to_fail
        if fatal or escalated:
            message = where + (
                ", ".join(fatal)
                if fatal
                else ", ".join(rates) + f" ({len(warn_times)} warnings within an hour)"
            )
            out.append(
                failed(
                    KIND,
                    target,
                    message,
                    details,
                    outcome=DOWN,
                    node=node,
                    component=far_end,
                    component_size=history.switch_nodes,
                )
            )
        elif rates:
            message = where + ", ".join(rates)
            out.append(warned(KIND, target, message, details, outcome=DEGRADED, node=node))
        elif history.missing_runs:
            message = (
                f"no new reading for {counted(history.missing_runs, 'run')} while the node's other "
                "ports report"
            )
            out.append(passed(KIND, target, message, details, node=node))
        else:
            unread = [n for n in JUDGED if n not in history.latest.counters]
            if unread:  # judged only on what its source reports: never a silent pass
                details["not_reported"] = unread
            rest = f" (not reported, not checked: {', '.join(unread)})" if unread else ""
            if history.latest.state not in (None, "ACTIVE"):
                why = "node not in service" if was_active else "not ACTIVE when first judged"
                message = f"{history.latest.state} ({why}); counters within limits{rest}"
            else:
                message = f"within limits{rest}"
            out.append(passed(KIND, target, message, details, node=node))
    return out
