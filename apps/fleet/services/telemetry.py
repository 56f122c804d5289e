"""Telemetry intake: latest values, previous values, events, 5-minute rollups — in bulk."""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import orjson
from django.db import connection, transaction
from django.utils import timezone

from apps.common.bulk import insert_ignore, update_many, upsert_merge
from apps.common.errors import BatchError
from apps.fleet.events import changes
from apps.fleet.intake import TelemetrySample
from apps.fleet.models import GPU, Node, NodeRollup, TelemetryEvent
from apps.fleet.rollup import aggregate
from apps.fleet.telemetry import PROBE_METRICS, ROLLUP_METRICS


@dataclass(frozen=True)
class IngestResult:
    """What a batch did: samples accepted, applied, already seen (stale), events written."""

    accepted: int
    applied: int
    stale: int
    events: int


@transaction.atomic
def telemetry_ingest(
    *, samples: Sequence[TelemetrySample], now: dt.datetime | None = None
) -> IngestResult:
    """Store a validated batch, all or nothing.

    A sample is applied once: per GPU, only samples newer than the newest one already
    applied count (the GPU's `updated_at` is its high-water mark), so re-posting a batch
    changes nothing. Unknown nodes or GPU indexes reject the batch, naming the sample.
    """
    now = now or timezone.now()
    node_ids = dict(
        Node.objects.filter(hostname__in={s.node for s in samples}).values_list("hostname", "pk")
    )
    gpus_qs = GPU.objects.filter(node_id__in=node_ids.values())
    if connection.features.has_select_for_update:
        gpus_qs = gpus_qs.select_for_update()  # serialise concurrent batches for one GPU
    gpus = {
        (row[1], row[2]): row
        for row in gpus_qs.values_list(
            "pk", "node_id", "index", "metrics", "updated_at", "uuid", "model", "probe_at"
        )
    }
    _check_known(samples, node_ids, gpus)

    by_gpu: dict[tuple[int, int], list[TelemetrySample]] = defaultdict(list)
    for sample in samples:
        by_gpu[(node_ids[sample.node], sample.gpu)].append(sample)
    gpu_rows, event_rows, applied = [], [], []
    stale = 0
    for key, items in by_gpu.items():
        pk, node_id, index, latest, hwm, uuid, model, probe_at = gpus[key]
        latest, prev, prev_at = dict(latest or {}), None, hwm
        for sample in sorted(items, key=lambda s: s.ts):
            if hwm is not None and sample.ts <= hwm:
                stale += 1
                continue
            for change in changes(latest, sample.metrics):
                event_rows.append(
                    (node_id, index, sample.ts, change.kind, change.value, change.previous)
                )
            prev, prev_at = latest, hwm
            latest = {**latest, **sample.metrics}
            hwm = sample.ts
            uuid, model = sample.uuid or uuid, sample.model or model
            if PROBE_METRICS & sample.metrics.keys():
                probe_at = sample.ts
            applied.append((node_id, sample.ts, sample.metrics))
        if prev is not None:
            gpu_rows.append((pk, _json(latest), _json(prev), hwm, prev_at, uuid, model, probe_at))
    update_many(
        GPU._meta.db_table,
        ("id",),
        ("metrics", "prev_metrics", "updated_at", "prev_at", "uuid", "model", "probe_at"),
        gpu_rows,
    )
    if event_rows:
        insert_ignore(
            TelemetryEvent._meta.db_table,
            ("node_id", "gpu", "at", "kind", "value", "previous"),
            event_rows,
        )
    _rollup(applied)
    Node.objects.filter(pk__in=sorted(set(node_ids.values()))).update(last_seen_at=now)
    return IngestResult(len(samples), len(applied), stale, len(event_rows))


def _json(value: dict[str, float]) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # an integer beyond 64 bits (PostgreSQL's jsonb can hand one back)
        return json.dumps(value)


def _check_known(
    samples: Sequence[TelemetrySample],
    node_ids: dict[str, int],
    gpus: dict[tuple[int, int], tuple],
) -> None:
    errors: dict[str, list[str]] = {}
    for i, sample in enumerate(samples):
        node_id = node_ids.get(sample.node)
        if node_id is None:
            errors[f"samples[{i}].node"] = [f"unknown node {sample.node!r}; register it first"]
        elif (node_id, sample.gpu) not in gpus:
            errors[f"samples[{i}].gpu"] = [f"node {sample.node} has no GPU {sample.gpu}"]
        if len(errors) >= 100:
            break
    if errors:
        raise BatchError(errors)


_RULES = {"min": "min", "max": "max", "sum": "sum", "n": "sum"}


def _rollup(applied: list[tuple[int, dt.datetime, dict[str, float]]]) -> None:
    merge = {f"{m}_{part}": rule for m in ROLLUP_METRICS for part, rule in _RULES.items()}
    rows = []
    for (node_id, bucket), stats in aggregate(applied).items():
        row: list[object] = [node_id, bucket]
        for metric in ROLLUP_METRICS:
            s = stats.get(metric)
            row.extend(s if s is not None else (None, None, 0, 0))
        rows.append(row)
    upsert_merge(NodeRollup._meta.db_table, ("node_id", "bucket"), merge, rows)
