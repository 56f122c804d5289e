"""Parsing of intake batches — telemetry (`ingest/telemetry/`) and events (`ingest/events/`):
validate everything before writing."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from apps.common.errors import BatchError
from apps.common.hostnames import hostname_key
from apps.common.limits import METRIC_NAMES_PER_GPU
from apps.common.parse import batch_items, integer, node_name
from apps.common.timeutil import FUTURE_SLACK, not_future, parse_ts
from apps.fleet.vendors import VENDORS, model_name, vendor_error
from apps.telemetry.monitored import event_kinds
from apps.telemetry.pcibus import pci_bus_normal

MAX_SAMPLES = 200_000
MAX_METRICS = METRIC_NAMES_PER_GPU  # per sample; per GPU kept: services/telemetry.py
MAX_EVENTS = 10_000  # docs/operations.md, Limits: events per batch
MAX_MESSAGE = 500
PORT = re.compile(r"[A-Za-z0-9_.-]{1,40}/[0-9]{1,3}")


@dataclass(frozen=True, slots=True)
class TelemetrySample:
    """One GPU's values at one time."""

    node: str
    gpu: int
    ts: dt.datetime
    metrics: dict[str, float]
    uuid: str = ""
    model: str = ""
    pci_bus: str = ""  # normal form (apps.telemetry.pcibus), '' when not reported
    vendor: str = ""  # apps.fleet.vendors.VENDORS, '' when not reported
    # The exporter's mapping file whose series named the GPU (dcgm, amd, gaudi:
    # apps.telemetry.exporters); '' for posted JSON (docs/integrations.md, Exporters and
    # their mapping files).
    source: str = ""


def parse_telemetry_batch(payload: Any, *, now: dt.datetime | None = None) -> list[TelemetrySample]:
    """Parse `{samples: [{node, gpu, ts, metrics: {name: number}, vendor?, model?, uuid?,
    pci_bus?}]}`; BatchError names
    `samples[i].field` (and `samples[i].metrics.NAME`) for every problem — a `ts` more than
    5 minutes after `now` (default: now) among them."""
    now = now or timezone.now()
    samples = batch_items(payload, limit=MAX_SAMPLES)
    latest = now + FUTURE_SLACK
    out: list[TelemetrySample] = []
    for raw in samples:
        sample = _plain_sample(raw, latest)
        if sample is None:  # something to refuse or to normalise: the careful path decides
            return _parse_each(samples, now)
        out.append(sample)
    return out


def _plain_sample(raw: Any, latest: dt.datetime) -> TelemetrySample | None:
    """The common, well-formed sample read with few checks per value (C-level loops over the
    metrics); None for anything `_parse_each` must judge or normalise — it never accepts a
    sample that `_parse_each` would refuse, nor reads one differently."""
    if type(raw) is not dict:
        return None
    node, gpu, ts, metrics = raw.get("node"), raw.get("gpu"), raw.get("ts"), raw.get("metrics")
    if type(node) is not str or not 0 < len(node) <= 253 or node.strip() != node:
        return None
    node = hostname_key(node)
    if type(gpu) is not int or gpu < 0 or type(ts) is not str:
        return None
    if type(metrics) is not dict or not 0 < len(metrics) <= MAX_METRICS:
        return None
    values = metrics.values()
    if not _NUMBERS.issuperset(map(type, values)) or max(map(len, metrics)) > 64:
        return None  # bool, None, text, nested values; long names
    if not -(2**63) <= min(values) <= max(values) < 2**63:
        metrics = _wide_as_float(metrics)  # a 64-bit counter past 2**63, as `_metrics` does
        if metrics is None:
            return None
    if not all(map(math.isfinite, metrics.values())):
        return None  # NaN or infinite (lenient JSON)
    pci_bus = raw.get("pci_bus")
    try:
        when = parse_ts(ts)
        bus = "" if pci_bus is None else pci_bus_normal(pci_bus)
    except ValueError:
        return None
    if when > latest:
        return None
    if _IDENTITY.isdisjoint(raw):  # the common sample: no vendor, model or UUID
        return TelemetrySample(node, gpu, when, metrics, pci_bus=bus)
    vendor, model, uuid = raw.get("vendor"), raw.get("model"), raw.get("uuid")
    if vendor is not None and vendor not in _VENDORS:
        return None
    if not (_plain_name(model) and _plain_name(uuid)):
        return None
    return TelemetrySample(
        node,
        gpu,
        when,
        metrics,
        uuid=uuid or "",
        model=model_name(vendor or "", model or ""),
        pci_bus=bus,
        vendor=vendor or "",
    )


_NUMBERS = frozenset({int, float})
_IDENTITY = frozenset({"vendor", "model", "uuid"})
_VENDORS = frozenset(VENDORS)
MAX_NAME = 64  # a model's or UUID's characters (the GPU's columns)


def _plain_name(value: Any) -> bool:
    """None, or a string of at most MAX_NAME characters without surrounding spaces."""
    return value is None or (
        type(value) is str and len(value) <= MAX_NAME and value.strip() == value
    )


def _name(value: Any) -> str:
    """A model or UUID: text of at most MAX_NAME characters, surrounding spaces dropped."""
    if not isinstance(value, str):
        raise ValueError("must be a string")
    value = value.strip()
    if len(value) > MAX_NAME:
        raise ValueError(f"at most {MAX_NAME} characters")
    return value


def _vendor(value: Any) -> str:
    problem = vendor_error(value)
    if problem:
        raise ValueError(problem)
    return value


def _wide_as_float(metrics: dict[str, float]) -> dict[str, float] | None:
    """A copy with integers beyond 64 bits as floats; None when one is past a float's range
    (or a value is NaN) — the careful path's to judge."""
    try:
        return {
            k: float(v) if type(v) is int and not -(2**63) <= v < 2**63 else v
            for k, v in metrics.items()
        }
    except OverflowError:
        return None


def _parse_each(samples: list[Any], now: dt.datetime) -> list[TelemetrySample]:
    """Every sample checked field by field: BatchError names each problem (the first 100)."""
    errors: dict[str, list[str]] = {}
    out: list[TelemetrySample] = []
    for i, raw in enumerate(samples):
        where = f"samples[{i}]"
        if not isinstance(raw, dict):
            errors[where] = ["must be an object"]
            continue
        before = len(errors)
        node = _field(raw, "node", node_name, where, errors)
        gpu = _field(raw, "gpu", lambda v: integer(v, minimum=0), where, errors)
        ts = _field(raw, "ts", lambda v: not_future(parse_ts(v), now), where, errors)
        metrics = _metrics(raw.get("metrics"), where, errors)
        pci_bus = _optional(raw, "pci_bus", pci_bus_normal, where, errors) or ""
        vendor = _optional(raw, "vendor", _vendor, where, errors) or ""
        model = _optional(raw, "model", _name, where, errors) or ""
        uuid = _optional(raw, "uuid", _name, where, errors) or ""
        if len(errors) == before:
            out.append(
                TelemetrySample(
                    node,
                    gpu,
                    ts,
                    metrics,
                    uuid=uuid,
                    model=model_name(vendor, model),  # an AMD PCI device id as its name
                    pci_bus=pci_bus,
                    vendor=vendor,
                )
            )
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


def _optional(
    raw: dict[str, Any], name: str, parse: Any, where: str, errors: dict[str, list[str]]
) -> Any:
    return None if raw.get(name) is None else _field(raw, name, parse, where, errors)


def _metrics(value: Any, where: str, errors: dict[str, list[str]]) -> dict[str, float]:
    if not isinstance(value, dict) or not value:
        errors[f"{where}.metrics"] = ["must be a non-empty object of name: number"]
        return {}
    if len(value) > MAX_METRICS:
        errors[f"{where}.metrics"] = [f"at most {MAX_METRICS} metric names (the bound per GPU)"]
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


@dataclass(frozen=True, slots=True)
class EventIn:
    """One reported event (docs/xid.md): an XID from a node's kernel log, naming its GPU by
    index, by PCI address (normal form), or both; or an event of a kind a check declares,
    belonging to a GPU, a NIC port or a rank (`subject`, `port:mlx5_0/1` or `rank:12`) or to
    the node itself. `value` is an XID's code, else the number reported (1 by default)."""

    node: str
    ts: dt.datetime
    kind: str
    code: int | None
    gpu: int | None
    pci_bus: str
    message: str
    subject: str = ""
    value: float = 1.0


def parse_event_batch(payload: Any, *, now: dt.datetime) -> list[EventIn]:
    """Parse `{events: [{node, ts, kind, code?, gpu?, pci_bus?, port?, rank?, value?,
    message?}]}` (an XID needs `code` and `gpu` or `pci_bus`; a port's event `port`, a
    rank's `rank`); BatchError names `events[i].field` for every problem (at most 10,000)."""
    kinds = event_kinds()
    items = batch_items(payload, key="events", limit=MAX_EVENTS)
    errors: dict[str, list[str]] = {}
    out: list[EventIn] = []
    for i, raw in enumerate(items):
        where = f"events[{i}]"
        if not isinstance(raw, dict):
            errors[where] = ["must be an object"]
            continue
        before = len(errors)
        node = _field(raw, "node", node_name, where, errors)
        ts = _field(raw, "ts", parse_ts, where, errors)
        if ts is not None and ts > now + FUTURE_SLACK:
            errors[f"{where}.ts"] = ["is more than 5 minutes in the future"]
        kind = _field(raw, "kind", lambda v: _kind(v, kinds), where, errors)
        target = kinds[kind].target if kind in kinds else "gpu"
        bounded_code = lambda v: _bounded(v, 2**31 - 1)  # noqa: E731
        code = (_field if kind == "xid" else _optional)(raw, "code", bounded_code, where, errors)
        gpu = _optional(raw, "gpu", lambda v: _bounded(v, 32767), where, errors)
        pci_bus = _optional(raw, "pci_bus", pci_bus_normal, where, errors)
        message = _optional(raw, "message", _message, where, errors)
        value = _optional(raw, "value", _finite, where, errors)
        subject = ""
        if target == "gpu" and raw.get("gpu") is None and raw.get("pci_bus") is None:
            errors[f"{where}.gpu"] = ["give gpu, pci_bus or both"]
        elif target == "port":
            port = _field(raw, "port", _port, where, errors)
            subject = f"port:{port}"
        elif target == "rank":
            rank = _field(raw, "rank", lambda v: _bounded(v, 2**31 - 1), where, errors)
            subject = f"rank:{rank}"
        elif target == "node":  # on the GPU at its PCI address, when it gives one
            subject = f"pci:{pci_bus}" if pci_bus else "node"
        if kind != "xid" and not subject:  # a GPU's event of a declared kind
            subject = f"gpu:{gpu}" if gpu is not None else f"pci:{pci_bus}"
        if len(errors) == before:
            number = float(code) if kind == "xid" else (1.0 if value is None else value)
            out.append(
                EventIn(node, ts, kind, code, gpu, pci_bus or "", message or "", subject, number)
            )
        if len(errors) >= 100:
            errors["events"] = ["too many errors; first 100 shown"]
            break
    if errors:
        raise BatchError(errors)
    return out


def _bounded(value: object, maximum: int) -> int:
    number = integer(value, minimum=0)
    if number > maximum:
        raise ValueError(f"must be ≤ {maximum}")
    return number


def _kind(value: object, kinds: Mapping[str, object]) -> str:
    if not isinstance(value, str) or value not in kinds:
        raise ValueError(f"must be one of {', '.join(sorted(kinds))}")
    return value


def _finite(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError("must be a finite number")
    return float(value)


def _port(value: object) -> str:
    """A NIC port as `device/port` (`mlx5_0/1`)."""
    if not isinstance(value, str) or not PORT.fullmatch(value):
        raise ValueError("must be device/port, such as mlx5_0/1")
    return value


def _message(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    if len(value) > 4 * MAX_MESSAGE:
        raise ValueError(f"must be at most {4 * MAX_MESSAGE} characters")
    return value.strip()[:MAX_MESSAGE]  # a kernel line's tail: kept, cut to the column
