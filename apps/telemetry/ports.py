"""NIC ports' readings in a telemetry batch (`ports: [...]` beside `samples`): parsing and
the normal forms of their values, validated before anything is written
(docs/integrations.md, NIC ports)."""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from typing import Any

from apps.common.errors import BatchError
from apps.common.limits import METRIC_NAMES_PER_PORT
from apps.common.parse import integer, node_name, text
from apps.common.timeutil import not_future, parse_ts
from apps.telemetry.intake import TelemetrySample, _field, _optional, parse_telemetry_batch

MAX_PORT_READINGS = 100_000  # per batch: 1,280 nodes × 64 ports, with room
DEVICE = re.compile(r"[A-Za-z0-9_.-]{1,40}")
MAX_PORT_NUMBER = 999  # a port's subject in events is `device/NNN` at most

# The InfiniBand port states (sysfs `state`: `4: ACTIVE`; node_exporter's state_id), as
# the kernel names them (drivers/infiniband/core/sysfs.c). Another state is kept by the
# name it is reported with (`state_normal`): never ACTIVE, and never a refused batch.
STATES = {0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
STATE_LENGTH = 32  # the most characters of a state's name kept (Port.state, phys_state)
# Physical states (sysfs `phys_state`: `5: LinkUp`; node_exporter's physical_state_id).
PHYS_STATES = {
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "PhyTest",
}
# The counters the fabric is judged on (InfiniBand `counters/` and `hw_counters/`).
COUNTERS = (
    "link_downed",
    "link_error_recovery",
    "symbol_error",
    "port_rcv_errors",
    "port_xmit_discards",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_rcv_remote_physical_errors",
    "port_xmit_wait",
    "rnr_nak_retry_err",
    "local_ack_timeout_err",
)
_COUNTERS = frozenset(COUNTERS)
_RATE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*Gb/sec\b.*", re.IGNORECASE)
_NUMBERED = re.compile(r"\s*([0-9]+)\s*:\s*(\S+(?: \S+)*)\s*")  # the kernel's "7: Phy Test" too


@dataclass(frozen=True, slots=True)
class PortReading:
    """One port's values at one time: its state words, rate and counters (name → number)."""

    node: str
    device: str
    port: int
    ts: dt.datetime
    state: str = ""
    phys_state: str = ""
    rate_gbps: float | None = None
    counters: dict[str, int | float] = field(default_factory=dict)
    switch: str = ""
    switch_port: str = ""


def parse_port_batch(items: Any, *, now: dt.datetime) -> list[PortReading]:
    """Parse `ports: [{node, device, port, ts, metrics: {...}, switch?, switch_port?}]`;
    BatchError names `ports[i].field` (and `ports[i].metrics.NAME`) for every problem."""
    if not isinstance(items, list):
        raise BatchError({"ports": ["must be a list"]})
    if len(items) > MAX_PORT_READINGS:
        raise BatchError({"ports": [f"at most {MAX_PORT_READINGS} items per batch"]})
    errors: dict[str, list[str]] = {}
    out: list[PortReading] = []
    for i, raw in enumerate(items):
        where = f"ports[{i}]"
        if not isinstance(raw, dict):
            errors[where] = ["must be an object"]
            continue
        before = len(errors)
        node = _field(raw, "node", node_name, where, errors)
        device = _field(raw, "device", _device, where, errors)
        port = _field(raw, "port", _port_number, where, errors)
        ts = _field(raw, "ts", lambda v: not_future(parse_ts(v), now), where, errors)
        switch = _optional(raw, "switch", text, where, errors) or ""
        switch_port = _optional(raw, "switch_port", _switch_port, where, errors) or ""
        values = _metrics(raw.get("metrics"), f"{where}.metrics", errors)
        if len(errors) == before:
            out.append(
                PortReading(
                    node, device, port, ts, switch=switch, switch_port=switch_port, **values
                )
            )
        if len(errors) >= 100:
            errors["ports"] = ["too many errors; first 100 shown"]
            break
    if errors:
        raise BatchError(errors)
    return out


class _Words:
    """One table of state words (number → word) and the texts already read as one of them:
    a sweep repeats "4: ACTIVE" ten thousand times, so each text is matched once (at most
    `SEEN` texts kept). A word not in the table is kept as it is reported (a state the
    kernel adds, `5: ACTIVE_DEFER` before this table knew it): a port in a state nobody
    foresaw is stored as such, never the refusal of a whole batch."""

    SEEN = 256

    def __init__(self, names: dict[int, str]) -> None:
        self.names = names
        self.words = tuple(names.values())
        self.seen: dict[str, str] = {}

    def __call__(self, value: object) -> str:
        """The word `value` names: a number of the table, or a word alone or in sysfs's
        `N: NAME` form, any case; another name as reported (at most STATE_LENGTH
        characters), another whole number as `UNKNOWN_N`; ValueError for what is neither
        a name nor a whole number."""
        if type(value) is str:
            found = self.seen.get(value) or _word(value, self.words) or _reported(value)
            if found is not None:
                if len(self.seen) < self.SEEN:
                    self.seen[value] = found
                return found
        elif type(value) is int and value in self.names:
            return self.names[value]
        elif type(value) is int and 0 <= value < 2**31:
            return f"UNKNOWN_{value}"
        choices = ", ".join(self.words)
        raise ValueError(
            f"must be a state's name ({choices}, …; alone or in sysfs's 'N: NAME' form) "
            "or its number"
        )


_STATE_WORDS, _PHYS_STATE_WORDS = _Words(STATES), _Words(PHYS_STATES)


def state_normal(value: object) -> str:
    """`ACTIVE`, `active`, `4: ACTIVE` or 4 → `ACTIVE` (DOWN, INIT, ARMED alike); a state
    the table does not know by its reported name (`5: FUTURE` → `FUTURE`; 9 → `UNKNOWN_9`),
    which is not ACTIVE."""
    return _STATE_WORDS(value)


def phys_state_normal(value: object) -> str:
    """`LinkUp`, `linkup`, `5: LinkUp` or 5 → `LinkUp` (Polling, Disabled, … alike); another
    by its reported name, as `state_normal`."""
    return _PHYS_STATE_WORDS(value)


def state_of_number(value: int, names: dict[int, str]) -> str:
    """node_exporter's `state_id` (or `physical_state_id`) as its word: `UNKNOWN_N` for a
    number the table does not name; ValueError for a negative one or past 2**31."""
    if value in names:
        return names[value]
    if not 0 <= value < 2**31:
        raise ValueError("must be a state's number (a whole number from 0)")
    return f"UNKNOWN_{value}"


def rate_normal(value: object) -> float:
    """Gb/s as a number, or sysfs's `200 Gb/sec (4X HDR)`."""
    if isinstance(value, str):
        match = _RATE.fullmatch(value)
        if match is None:
            raise ValueError("must be a number of Gb/s, or text such as '200 Gb/sec (4X HDR)'")
        return float(match.group(1))
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError("must be a number of Gb/s")
    if value < 0:
        raise ValueError("must be ≥ 0")
    return float(value)


def _word(text: str, words: tuple[str, ...]) -> str | None:
    """The one of `words` that `text` names, alone or in sysfs's `N: NAME` form, any case."""
    numbered = _NUMBERED.fullmatch(text)
    word = (numbered.group(2) if numbered else text.strip()).replace(" ", "").lower()
    return next((w for w in words if w.lower() == word), None)


def _reported(text: str) -> str | None:
    """A state's name as reported (`5: ACTIVE_DEFER` → `ACTIVE_DEFER`), its characters that
    cannot be shown replaced by `?`, at most STATE_LENGTH of them; None for no name."""
    numbered = _NUMBERED.fullmatch(text[:200])
    name = (numbered.group(2) if numbered else text[:200]).strip()
    name = "".join(c if c.isprintable() else "?" for c in name[:STATE_LENGTH])
    return name or None


def _counter(value: object, name: str) -> int | float:
    """A counter: a non-negative integer (below 2**64); a name not among COUNTERS may be any
    finite number, kept as the samples' unknown names are."""
    if type(value) is int and 0 <= value < 2**64:  # the common case, at once
        return value
    if name not in _COUNTERS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("must be a number")
        if not math.isfinite(value):
            raise ValueError("must be finite")
        return value
    number = integer(value, minimum=0)
    if number >= 2**64:
        raise ValueError("must be below 2**64 (a 64-bit counter)")
    return number


def _metrics(value: Any, where: str, errors: dict[str, list[str]]) -> dict[str, Any]:
    if not isinstance(value, dict) or not value:
        errors[where] = ["must be a non-empty object of name: value"]
        return {}
    if len(value) > METRIC_NAMES_PER_PORT:
        errors[where] = [f"at most {METRIC_NAMES_PER_PORT} metric names (the bound per port)"]
        return {}
    out: dict[str, Any] = {}
    counters: dict[str, int | float] = {}
    for name, raw in value.items():
        if len(name) > 64:
            errors[where] = ["metric names are at most 64 characters"]
            continue
        parse = _PARSERS.get(name)
        try:
            if parse is not None:
                out[name] = parse(raw)
            else:
                counters[name] = _counter(raw, name)
        except ValueError as exc:
            errors[f"{where}.{name}"] = [str(exc)]
    out["counters"] = counters
    return out


_PARSERS = {"state": state_normal, "phys_state": phys_state_normal, "rate_gbps": rate_normal}


def _device(value: object) -> str:
    if not isinstance(value, str) or not DEVICE.fullmatch(value):
        raise ValueError("must be a device name such as mlx5_0 (letters, digits, _ . -)")
    return value


def _port_number(value: object) -> int:
    number = integer(value, minimum=0)
    if number > MAX_PORT_NUMBER:
        raise ValueError(f"must be ≤ {MAX_PORT_NUMBER}")
    return number


def _switch_port(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    return text(value, max_length=64)


@dataclass(frozen=True, slots=True)
class Growth:
    """How much one counter grew since the previous reading; `reset` when it went down (it
    was reset: its growth is then its new value, never negative)."""

    name: str
    growth: int | float
    reset: bool = False


def counter_growth(previous: dict[str, Any] | None, latest: dict[str, Any] | None) -> list[Growth]:
    """The counters that grew (or were reset) from `previous` to `latest`, COUNTERS first in
    their order, then the rest by name; none without a previous reading."""
    if not previous or not latest:
        return []
    order = {name: i for i, name in enumerate(COUNTERS)}
    out = []
    for name in sorted(latest, key=lambda n: (order.get(n, len(order)), n)):
        new, old = latest[name], previous.get(name)
        if not isinstance(new, int | float) or not isinstance(old, int | float):
            continue
        if new < old:
            out.append(Growth(name, new, reset=True))
        elif new > old:
            out.append(Growth(name, new - old))
    return out


def parse_telemetry_with_ports(
    payload: Any, *, now: dt.datetime
) -> tuple[list[TelemetrySample], list[PortReading]]:
    """A telemetry batch's `samples` and `ports`: either may be absent or empty, not both
    (BatchError naming `samples` then); each list as its own parser reads it."""
    if not isinstance(payload, dict):
        raise BatchError({"non_field_errors": ["body must be a JSON object"]})
    samples, ports = payload.get("samples"), payload.get("ports")
    if samples in (None, []) and ports in (None, []):
        raise BatchError({"samples": ["must be a non-empty list (or give ports or host readings)"]})
    readings = [] if ports is None else parse_port_batch(ports, now=now)
    if samples in (None, []) and readings:
        return [], readings
    return parse_telemetry_batch(payload, now=now), readings
