"""Parsing of `jobs/{id}/metrics/` batches: validate everything before anything is written."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from apps.common.errors import BatchError
from apps.common.limits import DURATION_S, TOKENS_PER_S
from apps.common.parse import batch_items, integer, node_name, number
from apps.common.timeutil import not_future, parse_ts

MAX_SAMPLES = 100_000


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One validated step sample; `node` set means a per-node timing sample."""

    ts: dt.datetime
    step: int
    step_time_s: float
    tokens_per_s: float | None
    loss: float | None
    grad_norm: float | None
    node: str | None
    compute_s: float | None

    def nonfinite(self) -> str:
        """The non-finite values as text (`loss=NaN`), kept because SQLite drops NaN."""
        parts = []
        for name in ("loss", "grad_norm"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                parts.append(f"{name}={_word(value)}")
        return " ".join(parts)


def _word(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def parse_metric_batch(payload: Any, *, now: dt.datetime | None = None) -> list[MetricSample]:
    """Parse `{samples: [...]}`; raise BatchError naming `samples[i].field` for every problem
    (a `ts` more than 5 minutes after `now`, default now, among them; a duration or tokens/s
    past the bounds on numbers, apps.common.limits)."""
    now = now or timezone.now()
    samples = batch_items(payload, limit=MAX_SAMPLES)
    errors: dict[str, list[str]] = {}
    parsed: list[MetricSample] = []
    for i, raw in enumerate(samples):
        sample = _parse_one(raw, f"samples[{i}]", errors, now)
        if sample is not None:
            parsed.append(sample)
        if len(errors) >= 100:
            errors["samples"] = ["too many errors; first 100 shown"]
            break
    if errors:
        raise BatchError(errors)
    return parsed


def _parse_one(
    raw: Any, where: str, errors: dict[str, list[str]], now: dt.datetime
) -> MetricSample | None:
    if not isinstance(raw, dict):
        errors[where] = ["must be an object"]
        return None
    values: dict[str, Any] = {}
    node = raw.get("node")

    def field(name: str, parse: Any, *, required: bool) -> None:
        if raw.get(name) is None:
            if required:
                errors[f"{where}.{name}"] = ["this field is required"]
            values[name] = None
            return
        try:
            values[name] = parse(raw[name])
        except ValueError as exc:
            errors[f"{where}.{name}"] = [str(exc)]

    field("ts", lambda v: not_future(parse_ts(v), now), required=True)
    field("step", lambda v: integer(v, minimum=0), required=True)
    field("step_time_s", lambda v: number(v, minimum=0, maximum=DURATION_S), required=True)
    field(
        "tokens_per_s",
        lambda v: number(v, minimum=0, maximum=TOKENS_PER_S),
        required=node is None,
    )
    field("loss", lambda v: number(v, allow_nonfinite=True), required=False)
    field("grad_norm", lambda v: number(v, allow_nonfinite=True), required=False)
    field("node", node_name, required=False)
    field("compute_s", lambda v: number(v, minimum=0, maximum=DURATION_S), required=False)
    if any(key.startswith(where + ".") for key in errors):
        return None
    return MetricSample(**values)
