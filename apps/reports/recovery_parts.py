"""Recovery time and its parts (docs/formulas.md, Recovery time and its parts) — pure functions
over plain values.

An unexpected interruption's recovery, from its failure f(i) to `recovered_at` (training
resumed), is cut at `detected_at`, `localized_at` and `mitigated_at` into four parts: detect,
localise, mitigate, restart. A missing time gives its share to the next part; the cuts are
kept in order and inside [f(i), recovered_at], so the four parts always sum to the recovery.
Per ISO week the reliability page charts the mean of each part, which stack to the week's
mean recovery.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from apps.common.weeks import WEEK, week_label
from apps.reports.choices import RecoveryPart

PARTS: tuple[str, ...] = tuple(RecoveryPart.values)  # detect, localise, mitigate, restart


@dataclass(frozen=True)
class RecoveryTimes:
    """What the recovery parts need of one unexpected interruption that recovered."""

    failed_at: dt.datetime
    detected_at: dt.datetime | None
    localized_at: dt.datetime | None
    mitigated_at: dt.datetime | None
    recovered_at: dt.datetime


def recovery_parts(times: RecoveryTimes) -> dict[str, float]:
    """Seconds of each part, `{detect, localise, mitigate, restart}`: the span f(i) →
    `recovered_at` cut at detected, localised and mitigated. A missing cut takes the one
    before it (its share goes to the next part); each cut is at least the one before and at
    most `recovered_at`, so a drain after training resumed leaves the restart part 0."""
    end = max(times.recovered_at, times.failed_at)
    cuts = [times.failed_at]
    for at in (times.detected_at, times.localized_at, times.mitigated_at):
        cuts.append(cuts[-1] if at is None else min(max(at, cuts[-1]), end))
    cuts.append(end)
    return {part: (cuts[k + 1] - cuts[k]).total_seconds() for k, part in enumerate(PARTS)}


def weekly_recovery(
    *, first: dt.datetime, weeks: int, now: dt.datetime, incidents: Sequence[RecoveryTimes]
) -> list[dict[str, Any]]:
    """For each of `weeks` ISO weeks from the one starting `first`: `{week, complete,
    interruptions, parts_minutes: {part: mean minutes or None}, recovery_minutes}` over the
    `incidents` (unexpected interruptions that recovered) whose f(i) lies in that week. A week
    with none has None everywhere: a gap, never a zero."""
    out = []
    for k in range(weeks):
        start = first + k * WEEK
        mine = [recovery_parts(i) for i in incidents if start <= i.failed_at < start + WEEK]
        means = {
            part: statistics.fmean(p[part] for p in mine) / 60 if mine else None for part in PARTS
        }
        out.append(
            {
                "week": week_label(start),
                "complete": start + WEEK <= now,
                "interruptions": len(mine),
                "parts_minutes": means,
                "recovery_minutes": sum(v for v in means.values() if v is not None)
                if mine
                else None,
            }
        )
    return out
