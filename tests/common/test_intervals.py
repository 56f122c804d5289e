"""Interval arithmetic."""

from __future__ import annotations

import datetime as dt

from apps.common.intervals import clip, length, subtract, union

T = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)


def h(a: float, b: float) -> tuple[dt.datetime, dt.datetime]:
    return (T + dt.timedelta(hours=a), T + dt.timedelta(hours=b))


def test_union_and_length_count_overlaps_once():
    assert union([h(3, 4), h(0, 2), h(1, 3), h(5, 5)]) == [h(0, 4)]
    assert length([h(0, 2), h(1, 3), h(5, 6)]) == 4 * 3600


def test_clip_and_subtract():
    assert clip([h(-1, 1), h(2, 9)], h(0, 3)) == [h(0, 1), h(2, 3)]
    assert subtract([h(0, 10)], [h(2, 3), h(5, 6), h(9, 12)]) == [h(0, 2), h(3, 5), h(6, 9)]
    assert subtract([h(0, 1)], [h(-1, 2)]) == []
