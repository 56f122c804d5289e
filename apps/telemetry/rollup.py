"""Per-node 5-minute rollups of GPU telemetry: pure aggregation, merged by the database."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from apps.telemetry.names import ROLLUP_METRICS, ROLLUP_SECONDS

# (min, max, sum, n) per metric
Stats = dict[str, list[float]]


def bucket_of(ts: dt.datetime) -> dt.datetime:
    """The start of the 5-minute bucket holding `ts`."""
    epoch = int(ts.timestamp())
    return dt.datetime.fromtimestamp(epoch - epoch % ROLLUP_SECONDS, tz=dt.UTC)


def aggregate(
    samples: Iterable[tuple[int, dt.datetime, dict[str, float]]],
) -> dict[tuple[int, dt.datetime], Stats]:
    """(node_id, ts, metrics) → {(node_id, bucket): {metric: [min, max, sum, n]}}.

    Values are gathered per (node, bucket, metric) first and reduced with the built-in
    min, max, sum and len (summed in the order given, as a running total would)."""
    buckets: dict[dt.datetime, dt.datetime] = {}  # a batch repeats its timestamps
    gathered: dict[tuple[int, dt.datetime], dict[str, list[float]]] = {}
    for node_id, ts, metrics in samples:
        bucket = buckets.get(ts)
        if bucket is None:
            bucket = buckets[ts] = bucket_of(ts)
        per_metric = gathered.get((node_id, bucket))
        if per_metric is None:
            per_metric = gathered[(node_id, bucket)] = {name: [] for name in ROLLUP_METRICS}
        for name in ROLLUP_METRICS:
            value = metrics.get(name)
            if value is not None:
                per_metric[name].append(value)
    return {
        key: {name: [min(v), max(v), sum(v), len(v)] for name, v in per_metric.items() if v}
        for key, per_metric in gathered.items()
    }
