"""The host readings a check judged, kept on each reading's row: the next run measures
counters' growth from them (docs/checks.md, `host_memory`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import orjson

from apps.common.bulk import update_many
from apps.telemetry.models import HostReading


@dataclass(frozen=True)
class HostJudged:
    """The reading of host reading row `pk` that a run judged."""

    pk: int
    ts: dt.datetime
    values: Mapping[str, object]


def host_readings_judged(judged: Sequence[HostJudged]) -> int:
    """Keep each reading as its row's judged one (one statement for them all); a newer
    reading that arrived meanwhile stays the row's latest and is judged next run."""
    rows = [(j.pk, j.ts, orjson.dumps(dict(j.values)).decode()) for j in judged]
    update_many(HostReading._meta.db_table, ("id",), ("judged_ts", "judged_values"), rows)
    return len(rows)
