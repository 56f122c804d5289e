"""Host readings from the telemetry intake: a row made for each (node, kind, subject) on its
first reading, its latest and previous reading kept (nothing more: no growth of the table
with time), in bulk — a few statements per batch, whatever its size
(docs/integrations.md, Host readings)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import orjson
from django.db import connection, transaction
from django.utils import timezone

from apps.common.bulk import insert_ignore_keys, update_many
from apps.common.errors import BatchError
from apps.common.limits import HOST_SUBJECTS_PER_NODE
from apps.fleet.models import Node
from apps.telemetry.host import HostReadingIn
from apps.telemetry.host_kinds import HOST_KINDS
from apps.telemetry.intake import TelemetrySample
from apps.telemetry.models import HostReading
from apps.telemetry.ports import PortReading
from apps.telemetry.services.ports import PortIngestResult, telemetry_with_ports_ingest
from apps.telemetry.services.samples import IngestResult

# The columns the bulk SQL names (`values` is stored as `latest_values`: VALUES is SQL's).
_COLUMNS = ("ts", "latest_values", "prev_values", "prev_ts", "source")
_STORED = ("pk", "node_id", "kind", "subject", "ts", "values")
_Key = tuple[int, str, str]  # (node id, kind, subject)


@dataclass(frozen=True)
class HostIngestResult:
    """What a batch's host readings did: applied; stale (not newer than the stored reading of
    their subject: a re-post, an older one); skipped (of a kind's readings not stored, a
    pseudo filesystem's)."""

    applied: int
    stale: int
    skipped: int = 0


@transaction.atomic
def host_ingest(
    *, readings: Sequence[HostReadingIn], now: dt.datetime | None = None, seen: bool = True
) -> HostIngestResult:
    """Store validated host readings, all or nothing; BatchError (nothing written) naming
    `host[i].node` for an unknown node, `host[i].subject` for the first new subject that
    would give a node more than HOST_SUBJECTS_PER_NODE.

    A reading its kind skips (a pseudo filesystem) is counted, not stored. Each (node, kind,
    subject, ts) is applied once: a subject's `ts` is its high-water mark, so a reading not
    newer than it changes nothing. Of the newer ones the newest becomes the latest reading
    and the one before it (in the batch, or the stored latest) the previous; a counter
    lower than before is stored as it is (it was reset). `seen`: the readings are a sign of
    life of their nodes, at `now` (the receive time, by default the clock's) — left to the
    samples and ports of the same batch when they write it."""
    if not readings:
        return HostIngestResult(0, 0)
    node_ids = dict(
        Node.objects.filter(hostname__in={r.node for r in readings}).values_list("hostname", "pk")
    )
    _check_nodes(readings, node_ids)
    by_subject: dict[_Key, list[tuple[int, HostReadingIn]]] = defaultdict(list)
    skipped = 0
    for i, reading in enumerate(readings):
        skip = HOST_KINDS[reading.kind].skip
        if skip is not None and skip(reading.values):
            skipped += 1
            continue
        by_subject[(node_ids[reading.node], reading.kind, reading.subject)].append((i, reading))
    if not by_subject:
        return HostIngestResult(0, 0, skipped)
    stored = _stored(node_ids.values())
    _check_bound(by_subject, stored)
    applied = stale = 0
    new = sorted(key for key in by_subject if key not in stored)
    if new:
        # A new subject is made with its readings (INSERT … ON CONFLICT DO NOTHING, in key
        # order): one statement for a node's first batch, no update. One a concurrent batch
        # made first waits on the unique index, is skipped, and is read again locked, this
        # batch's readings applied on top of the other's (as the NIC ports are made:
        # apps/telemetry/services/ports.py).
        firsts = {key: _apply(by_subject[key], None, {}) for key in new}
        made = insert_ignore_keys(
            HostReading._meta.db_table,
            ("node_id", "kind", "subject", *_COLUMNS),
            [(*key, *_row(row)) for key, (row, _, _) in firsts.items() if row is not None],
            ("node_id", "kind", "subject"),
        )
        for key in new:
            if key in made:
                _, done, old = firsts[key]
                applied, stale = applied + done, stale + old
                del by_subject[key]
        if len(made) < len(new):
            stored = _stored(node_ids.values())
    changed = []
    for key, items in by_subject.items():
        pk, _, _, _, ts, values = stored[key]
        row, done, old = _apply(items, ts, values)
        applied, stale = applied + done, stale + old
        if row is not None:
            changed.append((pk, *_row(row)))
    update_many(HostReading._meta.db_table, ("id",), _COLUMNS, changed)
    if seen:  # last: the nodes' rows are locked after the readings', as in every intake path
        Node.objects.filter(pk__in=sorted(set(node_ids.values()))).update(
            last_seen_at=now or timezone.now()
        )
    return HostIngestResult(applied, stale, skipped)


def telemetry_batch_ingest(
    *,
    samples: Sequence[TelemetrySample],
    readings: Sequence[PortReading],
    host: Sequence[HostReadingIn],
    now: dt.datetime | None = None,
) -> tuple[IngestResult, PortIngestResult, HostIngestResult]:
    """A telemetry batch's samples, port readings and host readings, together all or
    nothing; `now` as for `telemetry_ingest`."""
    if not host:
        return (*telemetry_with_ports_ingest(samples=samples, readings=readings, now=now),
                HostIngestResult(0, 0))  # fmt: skip
    if not samples and not readings:
        return IngestResult(0, 0, 0, 0), PortIngestResult(0, 0), host_ingest(readings=host, now=now)
    with transaction.atomic():
        result = host_ingest(readings=host, now=now, seen=False)
        return (*telemetry_with_ports_ingest(samples=samples, readings=readings, now=now), result)


# A subject's new row: its latest reading's ts, values, the previous values and ts, source.
_Row = tuple[dt.datetime, dict, dict, dt.datetime | None, str]


def _apply(
    items: Sequence[tuple[int, HostReadingIn]], ts: dt.datetime | None, values: dict | None
) -> tuple[_Row | None, int, int]:
    """A subject's readings on top of its stored `ts` and `values` (None and {} for a new
    one): its new row (None when no reading is newer), how many were applied, how many
    stale (not newer than the subject's high-water mark)."""
    row: _Row | None = None
    applied = stale = 0
    for _, reading in sorted(items, key=lambda item: item[1].ts):
        if ts is not None and reading.ts <= ts:
            stale += 1
            continue
        row = (reading.ts, reading.values, values or {}, ts, reading.source)
        ts, values = reading.ts, reading.values
        applied += 1
    return row, applied, stale


def _row(row: _Row) -> tuple[object, ...]:
    """A subject's new row as the bulk writes take it (values as JSON text)."""
    at, latest, prev, prev_ts, source = row
    return (at, _json(latest), _json(prev), prev_ts, source)


def _stored(node_ids: Iterable[int]) -> dict[_Key, tuple]:
    """The stored host readings of these nodes by (node id, kind, subject), each a row of
    `_STORED`; locked on PostgreSQL in one order, so two batches sharing subjects never
    deadlock. At most HOST_SUBJECTS_PER_NODE rows a node."""
    rows = HostReading.objects.filter(node_id__in=sorted(set(node_ids))).order_by(
        "node_id", "kind", "subject"
    )
    if connection.vendor == "postgresql":
        rows = rows.select_for_update()
    return {(row[1], row[2], row[3]): row for row in rows.values_list(*_STORED)}


def _json(values: dict) -> str:
    """Values as JSON text (a 64-bit counter stays an exact integer: orjson writes integers
    up to 2**64 − 1, the intake's bound)."""
    return orjson.dumps(values).decode()


def _check_nodes(readings: Sequence[HostReadingIn], node_ids: dict[str, int]) -> None:
    errors: dict[str, list[str]] = {}
    for i, reading in enumerate(readings):
        if reading.node not in node_ids:
            errors[f"host[{i}].node"] = [f"unknown node {reading.node!r}; register it first"]
            if len(errors) >= 100:
                break
    if errors:
        raise BatchError(errors)


def _check_bound(
    by_subject: dict[_Key, list[tuple[int, HostReadingIn]]], stored: dict[_Key, tuple]
) -> None:
    """docs/operations.md, Limits: a node has at most HOST_SUBJECTS_PER_NODE subjects, of
    every kind together, stored ones and the batch's new ones; past it the batch is refused
    naming the subject of the first reading past the bound."""
    count: dict[int, int] = defaultdict(int)
    for node_id, _, _ in stored:
        count[node_id] += 1
    errors: dict[str, list[str]] = {}
    for key, items in by_subject.items():
        if key in stored:
            continue
        count[key[0]] += 1
        if count[key[0]] == HOST_SUBJECTS_PER_NODE + 1:
            i, reading = min(items, key=lambda item: item[0])
            errors[f"host[{i}].subject"] = [
                f"node {reading.node} would have more than {HOST_SUBJECTS_PER_NODE} host "
                f"subjects: past the bound of {HOST_SUBJECTS_PER_NODE} subjects per node"
            ]
    if errors:
        raise BatchError(errors)
