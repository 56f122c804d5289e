"""NIC ports' readings from the telemetry intake: the ports made on first report, each
port's latest and previous reading kept, and each node's 5-minute port rollup (counters'
growth summed over its ports, ports not ACTIVE) merged — in bulk, a few statements per
batch."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import orjson
from django.db import connection, transaction
from django.utils import timezone

from apps.common.bulk import insert_ignore, update_many, upsert_merge
from apps.common.errors import BatchError
from apps.common.limits import PORTS_PER_NODE
from apps.fleet.models import Node
from apps.telemetry.intake import TelemetrySample
from apps.telemetry.models import Port, PortRollup
from apps.telemetry.ports import COUNTERS, PortReading
from apps.telemetry.rollup import bucket_of
from apps.telemetry.services.samples import IngestResult, telemetry_ingest

_COLUMNS = (
    "switch",
    "switch_port",
    "ts",
    "state",
    "phys_state",
    "rate_gbps",
    "counters",
    "prev_counters",
    "prev_ts",
)
# What is read of a stored port: not its previous reading, which a newer one replaces by
# the stored latest (and a batch with none changes nothing).
_STORED = ("pk", "node_id", "device", "port", *_COLUMNS[:-2])


@dataclass(frozen=True)
class PortIngestResult:
    """What a batch's port readings did: applied, and stale (not newer than the stored one)."""

    applied: int
    stale: int


@transaction.atomic
def ports_ingest(
    *, readings: Sequence[PortReading], now: dt.datetime | None = None
) -> PortIngestResult:
    """Store validated port readings, all or nothing; BatchError (nothing written) for an
    unknown node or a node that would have more than PORTS_PER_NODE ports.

    Each (node, device, port, ts) is applied once: a port's `ts` is its high-water mark, so
    a reading not newer than it (a re-post, an older one) changes nothing. Of the newer
    ones, the newest becomes the latest reading and the one before it (in the batch, or
    the stored latest) the previous. Each applied reading's growth over the one before it
    goes into its node's 5-minute `PortRollup` (one upsert for the batch). The nodes are
    seen at `now` (the receive time, by default the clock's)."""
    if not readings:
        return PortIngestResult(0, 0)
    node_ids = dict(
        Node.objects.filter(hostname__in={r.node for r in readings}).values_list("hostname", "pk")
    )
    _check_nodes(readings, node_ids)
    stored = _stored(node_ids.values())
    by_port: dict[tuple[int, str, int], list[tuple[int, PortReading]]] = defaultdict(list)
    for i, reading in enumerate(readings):
        by_port[(node_ids[reading.node], reading.device, reading.port)].append((i, reading))
    _check_bound(by_port, stored)
    new_ports = sorted(key for key in by_port if key not in stored)
    if new_ports:
        # The ports first seen here are made first, without a reading (INSERT … ON CONFLICT
        # DO NOTHING, in key order): a concurrent batch making the same port waits on the
        # unique index until this one ends and then finds it. Read again (locked), every
        # port of the batch is a stored one, and each batch applies its readings on top of
        # the other's: neither's is lost (the GPUs' rows, registered before any sample,
        # are locked the same way).
        insert_ignore(
            Port._meta.db_table,
            ("node_id", "device", "port", *_COLUMNS),
            [(*key, *_Latest().values()) for key in new_ports],
        )
        stored = _stored(node_ids.values())
    changed_rows = []
    applied = stale = 0
    rollup = _Rollup()
    for key, items in by_port.items():
        row = stored[key]
        latest = _Latest.of(row)
        for _, reading in sorted(items, key=lambda item: item[1].ts):
            if latest.ts is not None and reading.ts <= latest.ts:
                stale += 1
                continue
            before, latest = latest, latest.then(reading)
            rollup.add(key, before.counters, latest)
            applied += 1
        if latest.ts != row[_STORED.index("ts")]:
            changed_rows.append((row[0], *latest.values()))
    update_many(Port._meta.db_table, ("id",), _COLUMNS, changed_rows)
    rollup.write()
    # A port's reading is a sign of life of its node, as a GPU's sample is (last: the
    # nodes' rows are locked after the ports', in every intake path).
    Node.objects.filter(pk__in=sorted(set(node_ids.values()))).update(
        last_seen_at=now or timezone.now()
    )
    return PortIngestResult(applied, stale)


def _stored(node_ids: Iterable[int]) -> dict[tuple[int, str, int], tuple]:
    """The stored ports of these nodes by (node id, device, port), each a row of `_STORED`;
    locked on PostgreSQL in one order (node, device, port), so two batches sharing ports
    never deadlock."""
    rows = Port.objects.filter(node_id__in=sorted(set(node_ids))).order_by(
        "node_id", "device", "port"
    )
    if connection.vendor == "postgresql":
        rows = rows.select_for_update()
    return {(row[1], row[2], row[3]): row for row in rows.values_list(*_STORED)}


def telemetry_with_ports_ingest(
    *,
    samples: Sequence[TelemetrySample],
    readings: Sequence[PortReading],
    now: dt.datetime | None = None,
) -> tuple[IngestResult, PortIngestResult]:
    """A telemetry batch's samples and port readings, together all or nothing (a batch of
    only one of them costs no transaction of its own beyond that one's); `now` as for
    `telemetry_ingest`."""
    if not readings:
        return telemetry_ingest(samples=samples, now=now), PortIngestResult(0, 0)
    if not samples:
        return IngestResult(0, 0, 0, 0), ports_ingest(readings=readings, now=now)
    with transaction.atomic():
        ports = ports_ingest(readings=readings, now=now)
        return telemetry_ingest(samples=samples, now=now), ports


@dataclass(frozen=True, slots=True)
class _Latest:
    """A port's latest reading as it is being built from the stored one and the batch's."""

    switch: str = ""
    switch_port: str = ""
    ts: dt.datetime | None = None
    state: str = ""
    phys_state: str = ""
    rate_gbps: float | None = None
    counters: dict | None = None
    prev_counters: dict | None = None
    prev_ts: dt.datetime | None = None

    @classmethod
    def of(cls, row: tuple | None) -> _Latest:
        """The stored reading (a row of `_STORED`), or none."""
        if row is None:
            return cls()
        switch, switch_port, ts, state, phys_state, rate_gbps, counters = row[4:]
        return cls(switch, switch_port, ts, state, phys_state, rate_gbps, counters)

    def then(self, reading: PortReading) -> _Latest:
        """This reading, newer, on top: what it does not say (state, rate, switch) is kept."""
        return _Latest(
            reading.switch or self.switch,
            reading.switch_port or self.switch_port,
            reading.ts,
            reading.state or self.state,
            reading.phys_state or self.phys_state,
            self.rate_gbps if reading.rate_gbps is None else reading.rate_gbps,
            reading.counters,
            self.counters or {},
            self.ts,
        )

    def values(self) -> tuple:
        """The row's `_COLUMNS`, JSON as text (a 64-bit counter stays an exact integer:
        orjson writes integers up to 2**64 − 1, the intake's bound)."""
        return (
            self.switch,
            self.switch_port,
            self.ts,
            self.state,
            self.phys_state,
            self.rate_gbps,
            orjson.dumps(self.counters or {}).decode(),
            orjson.dumps(self.prev_counters or {}).decode(),
            self.prev_ts,
        )


# PortRollup's columns after (node_id, bucket), each with its merge rule.
_ROLLUP_MERGE = {**dict.fromkeys(COUNTERS, "sum"), "ports": "max", "not_active": "max"}
_PORTS, _NOT_ACTIVE = len(COUNTERS), len(COUNTERS) + 1


class _Rollup:
    """A batch's port rollups as they are gathered: (node id, bucket) → the growth of each
    counter, then ports reported and ports not ACTIVE (each port counted once a bucket)."""

    __slots__ = ("buckets", "counted", "rows")

    def __init__(self) -> None:
        self.rows: dict[tuple[int, dt.datetime], list[float]] = {}
        self.buckets: dict[dt.datetime, dt.datetime] = {}  # a batch repeats its timestamps
        self.counted: set[tuple[tuple[int, str, int], dt.datetime, bool]] = set()

    def add(self, key: tuple[int, str, int], previous: dict | None, latest: _Latest) -> None:
        """One applied reading of port `key` (now `latest`) over the counters before it
        (`previous`; none for a port's first reading, which grew nothing yet)."""
        ts = latest.ts
        if ts is None:  # an applied reading always has its time
            return
        bucket = self.buckets.get(ts)
        if bucket is None:
            bucket = self.buckets[ts] = bucket_of(ts)
        acc = self.rows.get((key[0], bucket))
        if acc is None:
            acc = self.rows[(key[0], bucket)] = [0.0] * (len(COUNTERS) + 2)
        if (key, bucket, False) not in self.counted:
            self.counted.add((key, bucket, False))
            acc[_PORTS] += 1
        if latest.state and latest.state != "ACTIVE" and (key, bucket, True) not in self.counted:
            self.counted.add((key, bucket, True))
            acc[_NOT_ACTIVE] += 1
        if not previous:
            return
        counters = latest.counters or {}
        for i, name in enumerate(COUNTERS):
            new, old = counters.get(name), previous.get(name)
            if new is None or old is None:
                continue
            acc[i] += new - old if new >= old else new

    def write(self) -> None:
        """Merge them into the stored rollups: growth summed, ports the most reported."""
        upsert_merge(
            PortRollup._meta.db_table,
            ("node_id", "bucket"),
            _ROLLUP_MERGE,
            [
                (node_id, bucket, *acc[:_PORTS], int(acc[_PORTS]), int(acc[_NOT_ACTIVE]))
                for (node_id, bucket), acc in self.rows.items()
            ],
        )


def _check_nodes(readings: Sequence[PortReading], node_ids: dict[str, int]) -> None:
    errors: dict[str, list[str]] = {}
    for i, reading in enumerate(readings):
        if reading.node not in node_ids:
            errors[f"ports[{i}].node"] = [f"unknown node {reading.node!r}; register it first"]
            if len(errors) >= 100:
                break
    if errors:
        raise BatchError(errors)


def _check_bound(
    by_port: dict[tuple[int, str, int], list[tuple[int, PortReading]]],
    stored: dict[tuple[int, str, int], tuple],
) -> None:
    """docs/operations.md, Limits: a node has at most PORTS_PER_NODE ports, stored ones and
    the batch's new ones together; past it the batch is refused naming the first reading of
    a port past the bound."""
    count: dict[int, int] = defaultdict(int)
    for node_id, _, _ in stored:
        count[node_id] += 1
    errors: dict[str, list[str]] = {}
    for key, items in by_port.items():
        if key in stored:
            continue
        count[key[0]] += 1
        if count[key[0]] == PORTS_PER_NODE + 1:
            i, reading = items[0]
            errors[f"ports[{i}]"] = [
                f"node {reading.node} would have more than {PORTS_PER_NODE} ports: past the "
                f"bound of {PORTS_PER_NODE} ports per node"
            ]
    if errors:
        raise BatchError(errors)
