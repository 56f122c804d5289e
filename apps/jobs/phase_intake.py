"""Parsing of `POST jobs/{id}/phases/` batches (docs/api.md, Jobs; docs/agent.md, Phases):
time a run spent not training. Everything is validated before anything is written, and each
problem is named `phases[i].field`. Pure.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from apps.common.errors import BatchError
from apps.common.limits import DURATION_S
from apps.common.parse import batch_items, bound_text, integer, node_name
from apps.common.timeutil import not_future, parse_ts

MAX_PHASES = 10_000
NAME_LENGTH = 64
INT64 = 2**63 - 1
_NAME = re.compile(r"[a-z0-9][a-z0-9_.:-]*")
_ERRORS_SHOWN = 100


@dataclass(frozen=True, slots=True)
class PhaseItem:
    """One validated phase: `name` (lower case) from `start` to `end`."""

    name: str
    start: dt.datetime
    end: dt.datetime
    node: str | None
    step: int | None


def phase_name(value: object) -> str:
    """A phase's name: a short slug (`eval`, `checkpoint_restore`, `data-wait`), lower case."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    name = value.strip().lower()
    if len(name) > NAME_LENGTH:
        raise ValueError(f"must be at most {NAME_LENGTH} characters")
    if not _NAME.fullmatch(name):
        raise ValueError(
            "must be letters, digits, '_', '-', '.' or ':' (starting with one of the first two)"
        )
    return name


def parse_phase_batch(payload: Any, *, now: dt.datetime | None = None) -> list[PhaseItem]:
    """Parse `{phases: [{name, start, end, node?, step?}]}`; raise BatchError naming
    `phases[i].field` for every problem: `end` before `start` or more than 30 days after it
    (apps.common.limits.DURATION_S), a stamp more than 5 minutes after `now`."""
    from django.utils import timezone

    now = now or timezone.now()
    items = batch_items(payload, key="phases", limit=MAX_PHASES)
    errors: dict[str, list[str]] = {}
    parsed: list[PhaseItem] = []
    for i, raw in enumerate(items):
        item = _parse_one(raw, f"phases[{i}]", errors, now)
        if item is not None:
            parsed.append(item)
        if len(errors) >= _ERRORS_SHOWN:
            errors["phases"] = [f"too many errors; first {_ERRORS_SHOWN} shown"]
            break
    if errors:
        raise BatchError(errors)
    return parsed


def _parse_one(
    raw: Any, where: str, errors: dict[str, list[str]], now: dt.datetime
) -> PhaseItem | None:
    if not isinstance(raw, dict):
        errors[where] = ["must be an object"]
        return None
    values: dict[str, Any] = {}

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

    field("name", phase_name, required=True)
    field("start", lambda v: not_future(parse_ts(v), now), required=True)
    field("end", lambda v: not_future(parse_ts(v), now), required=True)
    field("node", node_name, required=False)
    field("step", lambda v: _step(integer(v, minimum=0)), required=False)
    start, end = values.get("start"), values.get("end")
    if start is not None and end is not None:
        if end < start:
            errors[f"{where}.end"] = ["must be at or after start"]
        elif (end - start).total_seconds() > DURATION_S:
            errors[f"{where}.end"] = [
                f"must be at most {bound_text(DURATION_S)} s (30 days) after start"
            ]
    if any(key == where or key.startswith(where + ".") for key in errors):
        return None
    return PhaseItem(**values)


def _step(value: int) -> int:
    if value > INT64:
        raise ValueError(f"must be ≤ {INT64}")
    return value
