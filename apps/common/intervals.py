"""Interval arithmetic over half-open [start, end) datetime intervals. Pure.

Used wherever lost time is counted once however intervals overlap: an incident's cost, and
the weekly effective-rate report.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

Interval = tuple[dt.datetime, dt.datetime]


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, non-overlapping intervals covering the same instants (empty ones dropped)."""
    out: list[Interval] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def length(intervals: Iterable[Interval]) -> float:
    """Seconds covered by the intervals, overlaps counted once."""
    return sum((end - start).total_seconds() for start, end in union(intervals))


def clip(intervals: Iterable[Interval], window: Interval) -> list[Interval]:
    """The parts of the intervals inside `window`."""
    lo, hi = window
    return [(max(s, lo), min(e, hi)) for s, e in intervals if min(e, hi) > max(s, lo)]


def subtract(intervals: Iterable[Interval], taken: Iterable[Interval]) -> list[Interval]:
    """The parts of `intervals` not covered by `taken`."""
    out: list[Interval] = []
    cuts = union(taken)
    for start, end in union(intervals):
        cursor = start
        for cut_start, cut_end in cuts:
            if cut_end <= cursor or cut_start >= end:
                continue
            if cut_start > cursor:
                out.append((cursor, cut_start))
            cursor = max(cursor, cut_end)
        if cursor < end:
            out.append((cursor, end))
    return out
