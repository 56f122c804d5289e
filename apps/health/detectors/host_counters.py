"""What the host checks share (`host_memory`, `pcie`, `clock`): one subject's latest host
reading beside the one the previous run judged, a counter's growth between them, and its
growth within the last hour (docs/checks.md, `host_memory`).

A counter lower than the judged value was reset (a reboot, a driver reload): its growth is
0 and the new value is what the next run measures from — never an error. The first run,
with no judged reading, measures nothing and passes. Pure: plain values in, numbers out.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from apps.health.detectors.findings import number

# Growth counts towards a per-hour threshold for this long.
HOUR = dt.timedelta(hours=1)


@dataclass(frozen=True)
class HostHistory:
    """What a host check knows of one subject of one node (a memory controller, a PCIe
    device, a clock): its latest values, the values the previous run judged (`judged_at`
    None: none yet), the growth earlier runs saw within the hour per counter (from their
    stored results) and a count the previous run stored (runs in a row a condition held)."""

    node: str
    subject: str
    at: dt.datetime
    values: Mapping[str, object]
    judged_at: dt.datetime | None = None
    judged: Mapping[str, object] = field(default_factory=dict)
    grew: Mapping[str, tuple[tuple[dt.datetime, float], ...]] = field(default_factory=dict)
    runs: int = 0


def growth(history: HostHistory, name: str) -> float:
    """How much counter `name` grew since the judged reading: 0 on the first run, when
    either reading lacks it, when no new reading came, and after a reset."""
    if history.judged_at is None or history.at <= history.judged_at:
        return 0.0
    now, before = number(history.values.get(name)), number(history.judged.get(name))
    if now is None or before is None or now < before:
        return 0.0
    return now - before


def hourly(history: HostHistory, name: str, now: dt.datetime) -> tuple[float, list[list[object]]]:
    """Counter `name`'s growth within the hour before `now` (earlier runs' and this one's),
    and that growth as it is kept in the result's details for the next run
    (`[[iso time, growth], …]`)."""
    seen = [(t, n) for t, n in history.grew.get(name, ()) if now - t < HOUR]
    grown = growth(history, name)
    if grown > 0:
        seen.append((history.at, grown))
    return sum(n for _, n in seen), [[t.isoformat(), n] for t, n in seen]


def unread(history: HostHistory, names: tuple[str, ...]) -> list[str]:
    """The names among `names` the latest reading does not carry (its source cannot report
    them): judged only on what is reported, and said so — never a silent pass."""
    return [n for n in names if number(history.values.get(n)) is None]


def not_reported(names: list[str]) -> str:
    """` (not reported, not checked: a, b)`, or '' when every name was reported."""
    return f" (not reported, not checked: {', '.join(names)})" if names else ""
