"""GPU availability (docs/formulas.md) — pure functions over a node's state history.

A node is available while `healthy` or `suspect`; from `in_service_at` it is healthy until
its first change. Time before `in_service_at` and after now does not count at all.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from apps.common.intervals import Interval, clip, length

AVAILABLE = frozenset({"healthy", "suspect"})


@dataclass(frozen=True)
class NodeHistory:
    """A node's state at the window's start (None: no change at or before it) and its
    changes after it, as (at, state) in time order."""

    hostname: str
    gpu_count: int
    in_service_at: dt.datetime
    state_at_start: str | None
    changes: Sequence[tuple[dt.datetime, str]] = ()


def service_window(
    node: NodeHistory, start: dt.datetime, end: dt.datetime, now: dt.datetime
) -> Interval | None:
    """W ∩ [in_service_at, now), or None when empty."""
    lo, hi = max(start, node.in_service_at), min(end, now)
    return (lo, hi) if hi > lo else None


def unavailable(
    node: NodeHistory, start: dt.datetime, end: dt.datetime, now: dt.datetime
) -> list[Interval]:
    """The intervals within W ∩ [in_service_at, now) when the node was not available."""
    window = service_window(node, start, end, now)
    if window is None:
        return []
    state, since = node.state_at_start or "healthy", window[0]
    out: list[Interval] = []
    for at, new_state in node.changes:
        if at <= window[0]:
            state = new_state
            continue
        if state not in AVAILABLE:
            out.append((since, at))
        state, since = new_state, at
    if state not in AVAILABLE:
        out.append((since, window[1]))
    return clip(out, window)


def availability(
    nodes: Sequence[NodeHistory], *, start: dt.datetime, end: dt.datetime, now: dt.datetime
) -> dict[str, object]:
    """Σ gpus × available time / Σ gpus × in-service time over W, and each node's figures."""
    by_node = []
    total = up = 0.0
    for node in nodes:
        window = service_window(node, start, end, now)
        in_service = length([window]) if window else 0.0
        down = length(unavailable(node, start, end, now))
        total += node.gpu_count * in_service
        up += node.gpu_count * (in_service - down)
        by_node.append(
            {
                "hostname": node.hostname,
                "gpu_count": node.gpu_count,
                "in_service_hours": in_service / 3600,
                "unavailable_hours": down / 3600,
                "availability": (in_service - down) / in_service if in_service else None,
            }
        )
    return {"availability": up / total if total else None, "by_node": by_node}


def bucket_seconds(intervals: Sequence[Interval], edges: Sequence[dt.datetime]) -> list[float]:
    """Seconds of `intervals` (non-overlapping) falling in each [edges[k], edges[k+1])."""
    out = [0.0] * (len(edges) - 1)
    for lo, hi in intervals:
        first = max(bisect.bisect_right(edges, lo) - 1, 0)
        for k in range(first, len(out)):
            if edges[k] >= hi:
                break
            a, b = max(lo, edges[k]), min(hi, edges[k + 1])
            if b > a:
                out[k] += (b - a).total_seconds()
    return out
