"""Telemetry intake: latest values, previous values, events, 5-minute rollups — in bulk."""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import orjson
from django.db import connection, transaction
from django.db.models.expressions import RawSQL
from django.utils import timezone

from apps.common.bulk import insert_ignore, upsert_merge
from apps.common.errors import BatchError
from apps.common.limits import METRIC_NAMES_PER_GPU
from apps.common.sql import ModelSql
from apps.fleet.models import GPU, Node
from apps.telemetry.events import changes
from apps.telemetry.intake import TelemetrySample
from apps.telemetry.models import NodeRollup, TelemetryEvent
from apps.telemetry.names import EVENT_METRICS, PROBE_METRICS, ROLLUP_METRICS
from apps.telemetry.rollup import aggregate

# Events derived from a batch (an XID appearing, a counter growing) are written in chunks
# of this many, so a batch of samples that each change every counter holds no more in memory
# (docs/operations.md, Limits: events per batch at 10,000).
EVENTS_HELD = 10_000


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
    gpus = _gpus_of(list(node_ids.values()))
    _check_known(samples, node_ids, gpus)

    by_gpu: dict[tuple[int, int], list[TelemetrySample]] = defaultdict(list)
    for sample in samples:
        by_gpu[(node_ids[sample.node], sample.gpu)].append(sample)
    micros = _Micros()
    gpu_rows, event_rows, applied = [], [], []
    learned: list[tuple[int, int, str]] = []  # (node, index, PCI address) newly known
    stale = events = 0
    past_bound: list[tuple[int, list[dict[str, float]]]] = []  # GPUs that may keep too many
    for (node_id, index), items in by_gpu.items():
        gpu = gpus[(node_id, index)]
        hwm, seen = gpu.hwm, gpu.seen
        # '' and None below mean "keep what is stored" (the UPDATE coalesces).
        newest_at = prev_at = probe_at = None
        uuid = model = pci_bus = vendor = source = ""
        fresh = []
        for sample in items if len(items) == 1 else sorted(items, key=_ts):
            at = micros[sample.ts]
            if hwm is not None and at <= hwm:
                stale += 1
                continue
            watched = {k: sample.metrics[k] for k in EVENT_METRICS if k in sample.metrics}
            if not watched.items() <= seen.items():  # all as before: no event (most samples)
                for change in changes(seen, sample.metrics):
                    code = _xid_code(change.value) if change.kind == "xid" else None
                    event_rows.append(
                        (node_id, index, sample.ts, change.kind, change.value, change.previous)
                        + (code, "", "", "exporter", now)
                    )
                    if len(event_rows) >= EVENTS_HELD:  # written as they come: memory flat
                        events += _events_insert(event_rows)
                        event_rows = []
                seen.update(watched)
            prev_at, newest_at, hwm = newest_at, sample.ts, at
            uuid, model = sample.uuid or uuid, sample.model or model
            vendor, source = sample.vendor or vendor, sample.source or source
            pci_bus = sample.pci_bus or pci_bus
            if not PROBE_METRICS.isdisjoint(sample.metrics):
                probe_at = now  # received: a probe round is placed by this, not the stamp
            applied.append((node_id, sample.ts, sample.metrics))
            fresh.append(sample.metrics)
        if not fresh:
            continue
        if gpu.n_names + sum(map(len, fresh)) > METRIC_NAMES_PER_GPU:
            past_bound.append((gpu.pk, fresh))
        # previous = stored values + every fresh sample but the newest; latest adds it.
        before: dict[str, float] = {}
        for metrics in fresh[:-1]:
            before.update(metrics)
        gpu_rows.append(
            (gpu.pk, _json(before) if before else "{}", _json(fresh[-1]), newest_at, prev_at)
            + (uuid, model, probe_at, pci_bus, vendor, source)
        )
        if pci_bus and pci_bus != gpu.pci_bus:
            learned.append((node_id, index, pci_bus))
    if past_bound:
        _check_names_kept(past_bound, {g.pk: key for key, g in gpus.items()}, node_ids)
    _update_gpus(gpu_rows)
    events += _events_insert(event_rows)
    _place_kernel_events(learned)
    _rollup(applied)
    Node.objects.filter(pk__in=sorted(set(node_ids.values()))).update(last_seen_at=now)
    return IngestResult(len(samples), len(applied), stale, events)


def _ts(sample: TelemetrySample) -> dt.datetime:
    return sample.ts


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class _Micros(dict[dt.datetime, int]):
    """Microseconds since the epoch of each timestamp, computed once per distinct value (a
    batch repeats its timestamps): exact integers to compare with stored high-water marks."""

    def __missing__(self, ts: dt.datetime) -> int:
        value = self[ts] = (ts - _EPOCH) // dt.timedelta(microseconds=1)
        return value


@dataclass(slots=True)
class _Gpu:
    """What the intake needs of a stored GPU: its id, high-water mark (microseconds since the
    epoch of the newest applied sample), PCI address, the stored values events are judged on
    (EVENT_METRICS), and how many metric names it keeps."""

    pk: int
    hwm: int | None
    pci_bus: str
    seen: dict[str, float]
    n_names: int


def _gpus_of(node_ids: list[int]) -> dict[tuple[int, int], _Gpu]:
    """The GPUs of these nodes by (node id, index), locked for the batch on PostgreSQL (a
    concurrent batch for the same GPUs waits). Only the values events are judged on are
    read; the merge of the rest happens in SQL (`_update_gpus`)."""
    if connection.vendor == "postgresql":
        return _gpus_postgres(node_ids)
    columns = ("pk", "node_id", "index", "updated_at", "pci_bus")
    watched = [f"metrics__{name}" for name in EVENT_METRICS]
    rows = GPU.objects.filter(node_id__in=node_ids).annotate(n_names=_names_kept())
    micros = _Micros()
    out = {}
    for pk, node_id, index, updated_at, pci_bus, *values, n_names in rows.values_list(
        *columns, *watched, "n_names"
    ):
        seen = {k: v for k, v in zip(EVENT_METRICS, values, strict=True) if v is not None}
        hwm = None if updated_at is None else micros[updated_at]
        out[(node_id, index)] = _Gpu(pk, hwm, pci_bus, seen, n_names)
    return out


def _gpus_postgres(node_ids: list[int]) -> dict[tuple[int, int], _Gpu]:
    """`_gpus_of` as one JSON document built by the database (the rows locked in a CTE, as
    an aggregate cannot lock) and decoded at once: no per-value conversion in Python, the
    high-water mark an exact integer."""
    # {name: value} of the watched values a GPU has (JSON nulls stripped); names from code.
    watched = ", ".join(f"'{name}', metrics -> '{name}'" for name in EVENT_METRICS)
    locked = (
        "SELECT {id} AS id, {node_id} AS node_id, {index} AS index, {updated_at} AS updated_at, "
        "{pci_bus} AS pci_bus, {metrics} AS metrics FROM {table} "
        "WHERE {node_id} = ANY(%s) FOR UPDATE"
    ).format_map(ModelSql(GPU))
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH g AS ({locked}) "
            "SELECT coalesce(json_agg(json_build_array(id, node_id, index, "
            "(extract(epoch FROM updated_at) * 1000000)::bigint, pci_bus, "
            "(SELECT count(*) FROM jsonb_object_keys(metrics)), "
            f"jsonb_strip_nulls(jsonb_build_object({watched})))), '[]')::text FROM g",
            [node_ids],
        )
        (document,) = cursor.fetchone()
    return {
        (node_id, index): _Gpu(pk, hwm, pci_bus, seen, n_names)
        for pk, node_id, index, hwm, pci_bus, n_names, seen in _loads(document)
    }


def _loads(text: str) -> list:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # an integer beyond 64 bits
        return json.loads(text)


def _events_insert(rows: list[tuple]) -> int:
    """Write derived events (the batch's transaction rolls them back if it fails later)."""
    if rows:
        insert_ignore(TelemetryEvent._meta.db_table, TelemetryEvent.INSERT_COLUMNS, rows)
    return len(rows)


# The merge, in the fleet's GPU table named from its model (`ModelSql`): no table or column
# name written by hand. PostgreSQL: from the batch staged by COPY; SQLite: one row at a time.
_UPDATE_FROM_STAGE = (
    "UPDATE {table} AS t SET {prev_metrics} = t.{metrics} || v.before, "
    "{metrics} = t.{metrics} || v.before || v.newest, {updated_at} = v.updated_at, "
    "{prev_at} = COALESCE(v.prev_at, t.{updated_at}), "
    "{uuid} = COALESCE(NULLIF(v.uuid, ''), t.{uuid}), "
    "{model} = COALESCE(NULLIF(v.model, ''), t.{model}), "
    "{probe_at} = COALESCE(v.probe_at, t.{probe_at}), "
    "{pci_bus} = COALESCE(NULLIF(v.pci_bus, ''), t.{pci_bus}), "
    "{vendor} = COALESCE(NULLIF(v.vendor, ''), t.{vendor}), "
    "{source} = COALESCE(NULLIF(v.source, ''), t.{source}) "
    "FROM _tel_gpu_v3 AS v WHERE t.{id} = v.id"
)
_UPDATE_EACH = (
    "UPDATE {table} SET {prev_metrics} = json_patch({metrics}, %s), "
    "{metrics} = json_patch(json_patch({metrics}, %s), %s), {updated_at} = %s, "
    "{prev_at} = COALESCE(%s, {updated_at}), {uuid} = COALESCE(NULLIF(%s, ''), {uuid}), "
    "{model} = COALESCE(NULLIF(%s, ''), {model}), {probe_at} = COALESCE(%s, {probe_at}), "
    "{pci_bus} = COALESCE(NULLIF(%s, ''), {pci_bus}), "
    "{vendor} = COALESCE(NULLIF(%s, ''), {vendor}), "
    "{source} = COALESCE(NULLIF(%s, ''), {source}) WHERE {id} = %s"
)


def _update_gpus(rows: list[tuple]) -> None:
    """Merge each GPU's new values into its stored ones in SQL:
    prev_metrics = metrics ⊕ before, metrics = metrics ⊕ before ⊕ newest. A row's `prev_at`
    None means the stored `updated_at`; `probe_at` None, and '' for uuid, model, PCI
    address, vendor and source, keep the stored value."""
    if not rows:
        return
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE TEMP TABLE IF NOT EXISTS _tel_gpu_v3 (id bigint, before jsonb, "
                "newest jsonb, updated_at timestamptz, prev_at timestamptz, uuid text, model text, "
                "probe_at timestamptz, pci_bus text, vendor text, source text)"
            )
            cursor.execute("TRUNCATE _tel_gpu_v3")
            with cursor.copy("COPY _tel_gpu_v3 FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            cursor.execute(_UPDATE_FROM_STAGE.format_map(ModelSql(GPU)))
        else:
            adapt = connection.ops.adapt_datetimefield_value
            cursor.executemany(
                _UPDATE_EACH.format_map(ModelSql(GPU)),
                [
                    (
                        before,
                        before,
                        newest,
                        adapt(hwm),
                        adapt(prev_at),
                        uuid,
                        model,
                        adapt(probe_at),
                        pci_bus,
                        vendor,
                        source,
                        pk,
                    )
                    for (
                        pk,
                        before,
                        newest,
                        hwm,
                        prev_at,
                        uuid,
                        model,
                        probe_at,
                        pci_bus,
                        vendor,
                        source,
                    ) in rows
                ],
            )


def _xid_code(value: float) -> int | None:
    return int(value) if float(value).is_integer() and 0 <= value < 2**31 else None


def _place_kernel_events(learned: list[tuple[int, int, str]]) -> None:
    """Kernel-log XIDs that named a PCI address no GPU had yet: now that telemetry says which
    GPU has it, fill in their `gpu`. Runs only for GPUs whose address was just learned, and
    reads through the partial index of unplaced events (usually none)."""
    index_of = {(node_id, bus): index for node_id, index, bus in learned if bus}
    if not index_of:
        return
    placed: dict[int, list[int]] = defaultdict(list)
    for pk, node_id, bus in TelemetryEvent.objects.filter(
        gpu__isnull=True, node_id__in={node_id for node_id, _ in index_of}
    ).values_list("pk", "node_id", "pci_bus"):
        if (node_id, bus) in index_of:
            placed[index_of[(node_id, bus)]].append(pk)
    for index, pks in placed.items():
        TelemetryEvent.objects.filter(pk__in=pks).update(gpu=index)


def _json(value: dict[str, float]) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # an integer beyond 64 bits (PostgreSQL's jsonb can hand one back)
        return json.dumps(value)


def _names_kept() -> RawSQL:
    """How many metric names a GPU keeps (the keys of its stored latest values)."""
    table = connection.ops.quote_name(GPU._meta.db_table)
    if connection.vendor == "postgresql":
        return RawSQL(f"(SELECT count(*) FROM jsonb_object_keys({table}.metrics))", ())
    return RawSQL(f"(SELECT count(*) FROM json_each({table}.metrics))", ())


def _check_names_kept(
    candidates: list[tuple[int, list[dict[str, float]]]],
    keys: dict[int, tuple[int, int]],
    node_ids: dict[str, int],
) -> None:
    """docs/operations.md, Limits: a GPU keeps at most METRIC_NAMES_PER_GPU metric names.
    `candidates` are the GPUs whose stored count plus this batch's could pass it; their names are
    read and counted exactly, and a GPU that would pass it rejects the batch before anything is
    written (BatchError naming the GPU and the bound)."""
    if not candidates:
        return
    stored = dict(
        GPU.objects.filter(pk__in=[pk for pk, _ in candidates]).values_list("pk", "metrics")
    )
    hosts = {pk: host for host, pk in node_ids.items()}
    errors: dict[str, list[str]] = {}
    for pk, fresh in candidates:
        names = set(stored[pk] or {}).union(*fresh)
        if len(names) > METRIC_NAMES_PER_GPU:
            node_id, index = keys[pk]
            errors[f"{hosts[node_id]}/{index}.metrics"] = [
                f"GPU {index} of {hosts[node_id]} would keep {len(names)} metric names: past "
                f"the bound of {METRIC_NAMES_PER_GPU} metric names per GPU"
            ]
    if errors:
        raise BatchError(errors)


def _check_known(
    samples: Sequence[TelemetrySample],
    node_ids: dict[str, int],
    gpus: dict[tuple[int, int], _Gpu],
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
