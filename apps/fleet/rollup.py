"""Per-node 5-minute rollups of GPU telemetry: pure aggregation, merged by the database."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from apps.fleet.telemetry import ROLLUP_METRICS, ROLLUP_SECONDS

# (min, max, sum, n) per metric
Stats = dict[str, list[float]]


def bucket_of(ts: dt.datetime) -> dt.datetime:
    """The start of the 5-minute bucket holding `ts`."""
    epoch = int(ts.timestamp())
    return dt.datetime.fromtimestamp(epoch - epoch % ROLLUP_SECONDS, tz=dt.UTC)


def aggregate(
    samples: Iterable[tuple[int, dt.datetime, dict[str, float]]],
) -> dict[tuple[int, dt.datetime], Stats]:
    """(node_id, ts, metrics) → {(node_id, bucket): {metric: [min, max, sum, n]}}."""
    out: dict[tuple[int, dt.datetime], Stats] = {}
    for node_id, ts, metrics in samples:
        stats = out.setdefault((node_id, bucket_of(ts)), {})
        for name in ROLLUP_METRICS:
            value = metrics.get(name)
            if value is None:
                continue
            s = stats.get(name)
            if s is None:
                stats[name] = [value, value, value, 1]
            else:
                s[0] = min(s[0], value)
                s[1] = max(s[1], value)
                s[2] += value
                s[3] += 1
    return out
