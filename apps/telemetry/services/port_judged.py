"""The readings the fabric check judged, kept on each port: the next run measures counters'
growth from them (docs/checks.md, `fabric`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import orjson

from apps.common.bulk import update_many
from apps.telemetry.models import Port


@dataclass(frozen=True)
class Judged:
    """The reading of port `pk` that a run judged."""

    pk: int
    ts: dt.datetime
    state: str
    counters: Mapping[str, float]


def ports_judged(judged: Sequence[Judged]) -> int:
    """Keep each reading as its port's judged one (one statement for them all); a newer
    reading that arrived meanwhile stays the port's latest and is judged next run."""
    rows = [(j.pk, j.ts, j.state, orjson.dumps(dict(j.counters)).decode()) for j in judged]
    columns = ("judged_ts", "judged_state", "judged_counters")
    update_many(Port._meta.db_table, ("id",), columns, rows)
    return len(rows)
