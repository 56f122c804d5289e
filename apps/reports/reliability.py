"""Reliability statistics (docs/formulas.md, Reliability) — pure functions over plain values.

MTBF is always given with its level: `mtbf_hours` is the cluster's (how often training is
interrupted), `node_mtbf_hours` a node's, `projected_job_mttf_hours` a job's of N nodes.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

HOUR = 3600.0
DAY = 86400.0


@dataclass(frozen=True)
class IncidentTimes:
    """What the reliability figures need of one incident."""

    occurred_at: dt.datetime | None
    detected_at: dt.datetime
    localized_at: dt.datetime | None
    recovered_at: dt.datetime | None
    interrupts_job: bool
    planned: bool
    category: str
    names_nodes: bool

    @property
    def failed_at(self) -> dt.datetime:
        """f(i): occurred_at, else detected_at."""
        return self.occurred_at or self.detected_at


def _overlap(a0: dt.datetime, a1: dt.datetime, b0: dt.datetime, b1: dt.datetime) -> float:
    return max(0.0, (min(a1, b1) - max(a0, b0)).total_seconds())


Window = tuple[dt.datetime, dt.datetime]


@dataclass(frozen=True)
class InService:
    """The nodes' time in service as the figures read it: the first node's `in_service_at`
    (None: no node) and, for each window [start, end) asked for, its end clipped to now,
    the node-seconds of the window that lie in [in_service_at, now)
    (docs/formulas.md, Reliability). A cluster's is summed in the database
    (apps/reports/selectors.py), not node by node here."""

    earliest: dt.datetime | None
    node_seconds: Mapping[Window, float]


def clipped(windows: Iterable[Window], now: dt.datetime) -> list[Window]:
    """Each window with its end clipped to `now`, as the figures count it."""
    return [(start, min(end, now)) for start, end in windows]


def in_service_of(
    times: Sequence[dt.datetime], windows: Iterable[Window], now: dt.datetime
) -> InService:
    """`InService` from every node's `in_service_at`, one by one (for a few nodes)."""
    return InService(
        earliest=min(times, default=None),
        node_seconds={
            (start, end): sum(_overlap(start, end, t, now) for t in times)
            for start, end in clipped(windows, now)
        },
    )


def _mean_minutes(values: list[float]) -> float | None:
    return statistics.fmean(values) / 60 if values else None


def percentile(values: Sequence[float], p: float) -> float | None:
    """The p-th percentile by linear interpolation between closest ranks: rank
    p/100 × (n − 1) of the sorted values (numpy's default, "linear"); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = p / 100 * (len(ordered) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)


def recovery_minutes(seconds: Sequence[float]) -> dict[str, float | None]:
    """`{p50, p90, max}` of recovery times given in seconds, in minutes; all None when there
    is none (docs/formulas.md, How long recovery took)."""
    minutes = [s / 60 for s in seconds]
    return {
        "p50": percentile(minutes, 50),
        "p90": percentile(minutes, 90),
        "max": max(minutes, default=None),
    }


def reliability(
    *,
    start: dt.datetime,
    end: dt.datetime,
    now: dt.datetime,
    incidents: Sequence[IncidentTimes],
    in_service: InService | Sequence[dt.datetime],
    job_nodes: int = 128,
) -> dict[str, Any]:
    """The reliability figures for window [start, end) (an end in the future is clipped to now),
    given the nodes' time in service (or each node's `in_service_at`)."""
    if not isinstance(in_service, InService):
        in_service = in_service_of(in_service, [(start, end)], now)
    end = min(end, now)
    in_window = [i for i in incidents if i.interrupts_job and start <= i.failed_at < end]
    unexpected = [i for i in in_window if not i.planned]
    planned = [i for i in in_window if i.planned]
    earliest = in_service.earliest
    counted_from = earliest if earliest is not None and start < earliest < end else start
    hours = max(0.0, (end - counted_from).total_seconds()) / HOUR
    n = len(unexpected)
    node_seconds = in_service.node_seconds[(start, end)]
    node_failures = sum(1 for i in unexpected if i.names_nodes)
    node_mtbf = node_seconds / HOUR / node_failures if node_failures else None
    counts = Counter(i.category for i in unexpected)
    recovery_s = [
        (i.recovered_at - i.failed_at).total_seconds() for i in unexpected if i.recovered_at
    ]
    return {
        "start": start,
        "end": end,
        "hours": hours,
        "interruptions": n,
        "planned_interruptions": len(planned),
        "mtbf_hours": hours / n if n else None,
        "mtbf_level": "cluster",
        "mttr_minutes": _mean_minutes(recovery_s),
        "recovery_minutes": recovery_minutes(recovery_s),
        "mttd_minutes": _mean_minutes(
            [(i.detected_at - i.occurred_at).total_seconds() for i in unexpected if i.occurred_at]
        ),
        "mttl_minutes": _mean_minutes(
            [(i.localized_at - i.detected_at).total_seconds() for i in unexpected if i.localized_at]
        ),
        "node_days": node_seconds / DAY,
        "node_failures": node_failures,
        "failure_rate_per_1000_node_days": 1000 * node_failures / (node_seconds / DAY)
        if node_seconds
        else None,
        "node_mtbf_hours": node_mtbf,
        "job_nodes": job_nodes,
        "projected_job_mttf_hours": node_mtbf / job_nodes if node_mtbf is not None else None,
        "by_category": [
            {"category": c, "count": k, "share": k / n}
            for c, k in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
    }
