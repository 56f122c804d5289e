"""`host_memory`: a node's memory controllers, by EDAC's error counts
(docs/checks.md, `host_memory`).

Fails when the uncorrectable count grew since the reading the previous run judged (the
node is drained: its next uncorrectable error may take it down with its job); warns when
the correctable count grew by more than `host_ce_per_hour` within an hour (a DIMM on its
way out). Pure: plain values in, findings out.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING

from apps.fleet.choices import NodeState
from apps.health.detectors.findings import (
    Finding,
    Outcome,
    TargetType,
    declare_target,
    failed,
    passed,
    warned,
)
from apps.health.detectors.host_counters import HostHistory, growth, hourly, not_reported, unread
from apps.incidents.choices import Category, Severity

if TYPE_CHECKING:  # the check's thresholds, declared by its plug-in
    from apps.health.checks.host_memory import HostMemoryLimits

KIND = "host_memory"
UNCORRECTABLE = Outcome(
    Category.HOST_MEMORY, Severity.SEV2, interrupts_job=True, node_state=NodeState.DRAINED
)
CORRECTABLE = Outcome(Category.HOST_MEMORY, Severity.SEV3, node_state=NodeState.SUSPECT)
COUNTERS = ("ce_total", "ue_total")


# What one result is about: a node's memory controller (`mc:HOST/mc0`, "memory controller mc0").
MC = declare_target(TargetType("mc", "memory controller"))
WITHIN = "within limits"  # a controller's pass with both counters reported, growth measured


def mc_target(host: str, controller: str) -> str:
    """The result target of one memory controller of a node (`mc:HOST/mc0`)."""
    return MC.make(host, controller)


def host_memory(
    controllers: Sequence[HostHistory], *, limits: HostMemoryLimits, now: dt.datetime
) -> list[Finding]:
    """A finding for every memory controller: fail when `ue_total` grew since the judged
    reading, warn when `ce_total` grew by more than `host_ce_per_hour` within the hour
    before `now`, else pass. `details.grew` keeps the hour's correctable growth for the next
    run."""
    out: list[Finding] = []
    for mc in controllers:
        target = mc_target(mc.node, mc.subject)
        ue = growth(mc, "ue_total")
        ce_hour, kept = hourly(mc, "ce_total", now)
        details: dict[str, object] = {
            "ce_total": mc.values.get("ce_total"),
            "ue_total": mc.values.get("ue_total"),
            "ce_last_hour": ce_hour,
        }
        if kept:  # only then: the next run reads the results that hold it
            details["grew"] = {"ce_total": kept}
        if ue > 0:
            errors = "error" if ue == 1 else "errors"
            message = f"{ue:g} uncorrectable memory {errors} (EDAC ue_total +{ue:g})"
            out.append(failed(KIND, target, message, details, outcome=UNCORRECTABLE, node=mc.node))
        elif ce_hour > limits.host_ce_per_hour:
            message = (
                f"{ce_hour:g} correctable memory errors within an hour > "
                f"{limits.host_ce_per_hour:g}"
            )
            out.append(warned(KIND, target, message, details, outcome=CORRECTABLE, node=mc.node))
        else:
            missing = unread(mc, COUNTERS)
            if missing:
                details["not_reported"] = missing
            first = (
                " (first reading: growth is measured from the next)" if mc.judged_at is None else ""
            )
            message = f"{WITHIN}{first}{not_reported(missing)}"
            out.append(passed(KIND, target, message, details, node=mc.node))
    return out
