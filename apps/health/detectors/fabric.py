"""`fabric`: NIC ports that went down, lost link integrity or flap (docs/checks.md, `fabric`).

Each port is judged on two readings of its counters (the previous run's and the latest):
a counter that grew is an error, one that went down was reset (never an error), and a rate
is its growth over the seconds between the two readings. Pure: plain values in, findings out.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from apps.fleet.choices import NodeState
from apps.health.detectors.findings import Finding, Outcome, failed, passed, warned
from apps.health.thresholds import Limits
from apps.incidents.choices import Category, Severity

KIND = "fabric"
DOWN = Outcome(Category.NIC, Severity.SEV2, interrupts_job=True, node_state=NodeState.DRAINED)
DEGRADED = Outcome(Category.NIC, Severity.SEV3, node_state=NodeState.SUSPECT)
# Any growth of these takes the port out of service.
FATAL_COUNTERS = (
    "link_downed",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "rnr_nak_retry_err",
)


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
    warns_last_hour: int = 0


def _growth(history: PortHistory, name: str) -> float:
    """How much counter `name` grew between the two readings (0 after a reset or with one
    reading)."""
    if history.previous is None:
        return 0.0
    now, before = history.latest.counters.get(name), history.previous.counters.get(name)
    if now is None or before is None or now < before:
        return 0.0
    return now - before


def _rates(history: PortHistory, limits: Limits) -> list[str]:
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
    )
    for name, words, limit in per_second:
        rate = _growth(history, name) / seconds
        if rate > limit:
            out.append(f"{words} {rate:.3g}/s > {limit:g}")
    return out


def fabric(ports: Sequence[PortHistory], *, limits: Limits, in_service: set[str]) -> list[Finding]:
    """A finding for every port: fail when a port of a node in service left ACTIVE or a
    fatal counter grew, or when it warned `fabric_warns_to_fail` times within an hour; warn
    when a rate is over its threshold; else pass. `details.warns` counts this run's warn."""
    out: list[Finding] = []
    for history in ports:
        target = port_target(history.node, history.port)
        grown = {name: _growth(history, name) for name in FATAL_COUNTERS}
        fatal = [f"{name} +{n:g}" for name, n in grown.items() if n > 0]
        was_active = history.previous is not None and history.previous.state == "ACTIVE"
        if was_active and history.latest.state != "ACTIVE" and history.node in in_service:
            fatal.insert(0, f"was ACTIVE, now {history.latest.state or 'not reported'}")
        rates = _rates(history, limits)
        warns = history.warns_last_hour + (1 if rates and not fatal else 0)
        details = {"warns": warns}
        node, where = history.node, f"port {history.port}: "
        if fatal:
            message = where + ", ".join(fatal)
            out.append(failed(KIND, target, message, details, outcome=DOWN, node=node))
        elif rates and warns >= limits.fabric_warns_to_fail:
            message = where + ", ".join(rates) + f" ({warns} warnings within an hour)"
            out.append(failed(KIND, target, message, details, outcome=DOWN, node=node))
        elif rates:
            message = where + ", ".join(rates)
            out.append(warned(KIND, target, message, details, outcome=DEGRADED, node=node))
        else:
            out.append(passed(KIND, target, "within limits", details, node=node))
    return out
