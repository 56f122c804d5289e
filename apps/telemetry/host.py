"""Host readings in a telemetry batch (`host: [...]` beside `samples` and `ports`): parsing
by the kinds' declarations (apps/telemetry/host_kinds.py), validated before anything is
written (docs/integrations.md, Host readings)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from apps.common.errors import BatchError
from apps.common.parse import node_name
from apps.common.timeutil import not_future, parse_ts
from apps.telemetry.host_kinds import HOST_KINDS, HostKind, Source
from apps.telemetry.intake import TelemetrySample, _field
from apps.telemetry.ports import PortReading, parse_telemetry_with_ports

MAX_HOST_READINGS = 100_000  # per batch: 256 subjects of 390 nodes, or fewer of more


@dataclass(frozen=True, slots=True)
class HostReadingIn:
    """One subject's values at one time, as a node (or node_exporter for it) reported them:
    `kind` one of HOST_KINDS, `subject` in its kind's spelling, `values` by the kind's names,
    each read by its type."""

    node: str
    kind: str
    subject: str
    ts: dt.datetime
    values: dict[str, int | float | str]
    source: str = Source.AGENT


def parse_host_batch(items: Any, *, now: dt.datetime) -> list[HostReadingIn]:
    """Parse `host: [{node, kind, subject, ts, values: {...}, source?}]`; BatchError names
    `host[i].field` (and `host[i].values.NAME`) for every problem: an unknown kind or value
    name among them, a value its type refuses, a `ts` more than 5 minutes after `now`."""
    if not isinstance(items, list):
        raise BatchError({"host": ["must be a list"]})
    if len(items) > MAX_HOST_READINGS:
        raise BatchError({"host": [f"at most {MAX_HOST_READINGS} items per batch"]})
    errors: dict[str, list[str]] = {}
    out: list[HostReadingIn] = []
    for i, raw in enumerate(items):
        where = f"host[{i}]"
        if not isinstance(raw, dict):
            errors[where] = ["must be an object"]
            continue
        before = len(errors)
        node = _field(raw, "node", node_name, where, errors)
        kind = _field(raw, "kind", _kind, where, errors)
        ts = _field(raw, "ts", lambda v: not_future(parse_ts(v), now), where, errors)
        source = Source.AGENT if raw.get("source") is None else None
        if source is None:
            source = _field(raw, "source", _source, where, errors)
        subject, values = "", {}
        if kind is not None:
            declared = HOST_KINDS[kind]
            subject = _field(raw, "subject", declared.read_subject, where, errors)
            values = _values(raw.get("values"), declared, f"{where}.values", errors)
        if len(errors) == before:
            out.append(HostReadingIn(node, kind, subject, ts, values, source))
        if len(errors) >= 100:
            errors["host"] = ["too many errors; first 100 shown"]
            break
    if errors:
        raise BatchError(errors)
    return out


def _kind(value: object) -> str:
    if not isinstance(value, str) or value not in HOST_KINDS:
        raise ValueError(f"unknown kind {value!r}: must be one of {', '.join(HOST_KINDS)}")
    return value


def _source(value: object) -> str:
    if value not in Source.ALL:
        raise ValueError(f"must be one of {', '.join(Source.ALL)}")
    return str(value)


def _values(
    value: Any, kind: HostKind, where: str, errors: dict[str, list[str]]
) -> dict[str, int | float | str]:
    """The reading's values by its kind's declaration; a null value is one not reported
    (left out), a name the kind does not declare an error naming it."""
    if not isinstance(value, dict) or not value:
        errors[where] = ["must be a non-empty object of name: value"]
        return {}
    out: dict[str, int | float | str] = {}
    for name, raw in value.items():
        declared = kind.by_name.get(name)
        if declared is None:
            names = ", ".join(kind.by_name)
            errors[f"{where}.{name[:64]}"] = [
                f"unknown value {name[:64]!r} of a {kind.slug} reading: one of {names}"
            ]
            continue
        if raw is None:
            continue
        try:
            out[name] = declared.parse(raw)
        except ValueError as exc:
            errors[f"{where}.{name}"] = [str(exc)]
    if not out and not any(k.startswith(f"{where}.") for k in errors):
        errors[where] = ["must give at least one value (all were null)"]
    return out


def parse_telemetry_with_host(
    payload: Any, *, now: dt.datetime
) -> tuple[list[TelemetrySample], list[PortReading], list[HostReadingIn]]:
    """A telemetry batch's `samples`, `ports` and `host`: any may be absent or empty, not all
    (BatchError naming `samples` then); each list as its own parser reads it, all of them
    before anything is written."""
    if not isinstance(payload, dict):
        raise BatchError({"non_field_errors": ["body must be a JSON object"]})
    items = payload.get("host")
    if items in (None, []):
        samples, ports = parse_telemetry_with_ports(payload, now=now)
        return samples, ports, []
    host = parse_host_batch(items, now=now)
    if payload.get("samples") in (None, []) and payload.get("ports") in (None, []):
        return [], [], host
    samples, ports = parse_telemetry_with_ports(payload, now=now)
    return samples, ports, host
