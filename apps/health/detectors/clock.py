"""`clock`: a node's clock, by its offset and whether it is synchronised
(docs/checks.md, `clock`).

Warns when the clock is not synchronised in two runs in a row, or when its offset is over
`clock_max_offset_s` either way: collectives' timeouts and every comparison of times go
wrong, and readings this node stamps ahead of KUAE's clock may be refused. Pure: plain
values in, findings out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from apps.health.detectors.findings import (
    Finding,
    Outcome,
    TargetType,
    declare_target,
    number,
    passed,
    warned,
)
from apps.health.detectors.host_counters import HostHistory
from apps.incidents.choices import Category, Severity

if TYPE_CHECKING:  # the check's thresholds, declared by its plug-in
    from apps.health.checks.clock import ClockLimits

KIND = "clock"
DRIFTING = Outcome(Category.OTHER, Severity.SEV3)
SYSTEM = "system"  # the kernel's clock: the node's own target
UNSYNCED_RUNS = 2  # runs in a row not synchronised before it warns


# What one result is about: a node's clock, named by the node alone (`clock:HOST`, "clock").
CLOCK = declare_target(TargetType("clock", "clock", one_per_node=True))


def clock_target(host: str, clock: str = SYSTEM) -> str:
    """The result target of a node's clock (`clock:HOST`; another clock `clock:HOST/ptp0`)."""
    return f"clock:{host}" if clock == SYSTEM else CLOCK.make(host, clock)


def clock(clocks: Sequence[HostHistory], *, limits: ClockLimits) -> list[Finding]:
    """A finding for every clock: warn when its offset is over `clock_max_offset_s` or when
    it was not synchronised in `UNSYNCED_RUNS` runs in a row (`details.unsynced_runs`, kept
    for the next run), else pass."""
    out: list[Finding] = []
    for c in clocks:
        target = clock_target(c.node, c.subject)
        offset = number(c.values.get("offset_s"))
        synced = number(c.values.get("synced"))
        unsynced = c.runs + 1 if synced == 0 else 0
        details: dict[str, object] = {
            "offset_s": offset,
            "synced": synced,
            "unsynced_runs": unsynced,
        }
        reasons = []
        if offset is not None and abs(offset) > limits.clock_max_offset_s:
            reasons.append(f"offset {offset:+.3g} s, beyond ±{limits.clock_max_offset_s:g} s")
        if unsynced >= UNSYNCED_RUNS:
            reasons.append(f"not synchronised in {unsynced} runs in a row")
        if reasons:
            message = (
                f"clock {', '.join(reasons)}: readings this node stamps may be refused "
                "as from the future, and collective timeouts misfire"
            )
            out.append(warned(KIND, target, message, details, outcome=DRIFTING, node=c.node))
            continue
        # A pass names no live figure: a clock that keeps passing is not rewritten each run
        # as its offset moves (docs/checks.md, `clock`); its streak is in its words.
        said = (
            f"offset within ±{limits.clock_max_offset_s:g} s"
            if offset is not None
            else "offset not reported"
        )
        state = (
            {0.0: ", not synchronised", 1.0: ", synchronised"}.get(synced, "")
            if synced is not None
            else ", synchronisation not reported"
        )
        del details["offset_s"]
        out.append(passed(KIND, target, f"{said}{state}", details, node=c.node))
    return out
