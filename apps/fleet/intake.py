"""Parsing of telemetry batches (`ingest/telemetry/`): validate everything before writing."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from apps.common.errors import BatchError
from apps.common.parse import batch_items, integer, text
from apps.common.timeutil import parse_ts

MAX_SAMPLES = 200_000
MAX_METRICS = 200


@dataclass(frozen=True, slots=True)
class TelemetrySample:
    """One GPU's values at one time."""

    node: str
    gpu: int
    ts: dt.datetime
    metrics: dict[str, float]
    uuid: str = ""
    model: str = ""


def parse_telemetry_batch(payload: Any) -> list[TelemetrySample]:
    """Parse `{samples: [{node, gpu, ts, metrics: {name: number}}]}`; BatchError names
    `samples[i].field` (and `samples[i].metrics.NAME`) for every problem."""
    samples = batch_items(payload, limit=MAX_SAMPLES)
    errors: dict[str, list[str]] = {}
    out: list[TelemetrySample] = []
    for i, raw in enumerate(samples):
        where = f"samples[{i}]"
        if not isinstance(raw, dict):
            errors[where] = ["must be an object"]
            continue
        before = len(errors)
        node = _field(raw, "node", text, where, errors)
        gpu = _field(raw, "gpu", lambda v: integer(v, minimum=0), where, errors)
        ts = _field(raw, "ts", parse_ts, where, errors)
        metrics = _metrics(raw.get("metrics"), where, errors)
        if len(errors) == before:
            out.append(TelemetrySample(node, gpu, ts, metrics))
        if len(errors) >= 100:
            errors["samples"] = ["too many errors; first 100 shown"]
            break
    if errors:
        raise BatchError(errors)
    return out


def _field(
    raw: dict[str, Any], name: str, parse: Any, where: str, errors: dict[str, list[str]]
) -> Any:
    if raw.get(name) is None:
        errors[f"{where}.{name}"] = ["this field is required"]
        return None
    try:
        return parse(raw[name])
    except ValueError as exc:
        errors[f"{where}.{name}"] = [str(exc)]
        return None


def _metrics(value: Any, where: str, errors: dict[str, list[str]]) -> dict[str, float]:
    if not isinstance(value, dict) or not value:
        errors[f"{where}.metrics"] = ["must be a non-empty object of name: number"]
        return {}
    if len(value) > MAX_METRICS:
        errors[f"{where}.metrics"] = [f"at most {MAX_METRICS} metrics per sample"]
        return {}
    out: dict[str, float] = {}
    for name, number in value.items():
        if len(name) > 64:
            errors[f"{where}.metrics"] = ["metric names are at most 64 characters"]
        elif isinstance(number, bool) or not isinstance(number, int | float):
            errors[f"{where}.metrics.{name}"] = ["must be a number"]
        elif not math.isfinite(number):
            errors[f"{where}.metrics.{name}"] = ["must be finite"]
        elif isinstance(number, int) and not -(2**63) <= number < 2**63:
            out[name] = float(number)  # beyond 64 bits: kept as a float, not refused
        else:
            out[name] = number
    return out
