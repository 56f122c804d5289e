"""Which samples are the extremes of their bucket (MinMax preselection at ingest). Pure."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

BUCKET_SECONDS = 300


def bucket_start(ts: dt.datetime) -> dt.datetime:
    """Start of the bucket holding `ts`."""
    epoch = int(ts.timestamp())
    return dt.datetime.fromtimestamp(epoch - epoch % BUCKET_SECONDS, tz=dt.UTC)


def bucket_extremes(points: Iterable[tuple[dt.datetime, float]]) -> set[dt.datetime]:
    """Timestamps of the lowest and highest value in each bucket (earliest on ties)."""
    low: dict[dt.datetime, tuple[float, dt.datetime]] = {}
    high: dict[dt.datetime, tuple[float, dt.datetime]] = {}
    for ts, value in points:
        key = bucket_start(ts)
        lo, hi = low.get(key), high.get(key)
        if lo is None or (value, ts) < lo:
            low[key] = (value, ts)
        if hi is None or (value, -ts.timestamp()) > (hi[0], -hi[1].timestamp()):
            high[key] = (value, ts)
    return {ts for _, ts in low.values()} | {ts for _, ts in high.values()}
