"""Parsing of rank registrations (`POST jobs/{id}/ranks/`) and stall reports
(`POST ingest/stalls/`): everything is validated before anything is written, and each
problem is named `ranks[i].field` / `reports[i].field` (docs/api.md, Conventions). Pure.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from apps.common.errors import BatchError
from apps.common.hostnames import hostname_key
from apps.common.limits import DURATION_S, HOSTNAME_LENGTH
from apps.common.parse import batch_items, integer, number, text
from apps.common.timeutil import not_future, parse_ts
from apps.jobs.stacks import FILE_LENGTH, FUNCTION_LENGTH, MAX_FRAMES, Frame, Stack, stack_of

MAX_RANKS = 10_000  # items of one registration
MAX_REPORTS = 10_000  # reports of one batch
MAX_WORLD = 1_000_000
INT32 = 2**31 - 1
INT64 = 2**63 - 1
_ERRORS_SHOWN = 100


@dataclass(frozen=True, slots=True)
class RankItem:
    """One validated registration: a rank's process, as it started."""

    rank: int
    world_size: int
    node: str
    local_rank: int | None
    pid: int | None
    started_at: dt.datetime


@dataclass(frozen=True, slots=True)
class StallReport:
    """One validated stall report. `stack` is None for an empty stack; `in_collective` is
    the report's, or (sent as null) whether the stack holds a collective."""

    job: int
    node: str
    ts: dt.datetime
    rank: int
    last_step: int | None
    stalled_s: float | None
    stack: Stack | None
    in_collective: bool
    resumed: bool
    world_size: int | None


class _Errors:
    """The errors of one batch, at most `_ERRORS_SHOWN` of them."""

    def __init__(self, items: str) -> None:
        self.items = items
        self.found: dict[str, list[str]] = {}

    def add(self, key: str, message: str) -> None:
        self.found.setdefault(key, []).append(message)

    @property
    def full(self) -> bool:
        return len(self.found) >= _ERRORS_SHOWN

    def raise_any(self) -> None:
        if self.full:
            self.found[self.items] = [f"too many errors; first {_ERRORS_SHOWN} shown"]
        if self.found:
            raise BatchError(self.found)


def _read(
    raw: dict[str, Any],
    where: str,
    errors: _Errors,
    name: str,
    parse: Callable[[Any], Any],
    *,
    required: bool,
    nullable: bool = False,
) -> Any:
    """`raw[name]` parsed, or None (an error noted when it is required or bad)."""
    prefix = f"{where}." if where else ""
    if name not in raw or (raw[name] is None and not nullable):
        if required:
            errors.add(f"{prefix}{name}", "this field is required")
        return None
    if raw[name] is None:
        return None
    try:
        return parse(raw[name])
    except ValueError as exc:
        errors.add(f"{prefix}{name}", str(exc))
        return None


def _bounded(maximum: int, minimum: int = 0) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        result = integer(value, minimum=minimum)
        if result > maximum:
            raise ValueError(f"must be at most {maximum:,}")
        return result

    return parse


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def parse_rank_batch(payload: Any, *, now: dt.datetime) -> list[RankItem]:
    """Parse `{ranks: [{rank, world_size, node, local_rank?, pid?, started_at}]}` (1 to
    10,000 items); raise BatchError naming `ranks[i].field` for every problem."""
    items = batch_items(payload, key="ranks", limit=MAX_RANKS)
    errors = _Errors("ranks")
    parsed: list[RankItem] = []
    for i, raw in enumerate(items):
        where = f"ranks[{i}]"
        if not isinstance(raw, dict):
            errors.add(where, "must be an object")
            continue
        before = len(errors.found)
        rank = _read(raw, where, errors, "rank", _bounded(MAX_WORLD - 1), required=True)
        world = _read(raw, where, errors, "world_size", _bounded(MAX_WORLD, 1), required=True)
        node = _read(raw, where, errors, "node", _hostname, required=True)
        local = _read(raw, where, errors, "local_rank", _bounded(INT32), required=False)
        pid = _read(raw, where, errors, "pid", _bounded(INT32), required=False)
        started = _read(
            raw, where, errors, "started_at", lambda v: not_future(parse_ts(v), now), required=True
        )
        if rank is not None and world is not None and rank >= world:
            errors.add(f"{where}.rank", f"must be less than world_size ({world})")
        if len(errors.found) == before:
            parsed.append(RankItem(rank, world, node, local, pid, started))
        if errors.full:
            break
    errors.raise_any()
    return parsed


def _hostname(value: Any) -> str:
    """A node's name, in lower case (hostnames compare without regard to case)."""
    return hostname_key(text(value, max_length=HOSTNAME_LENGTH))


def stall_items(payload: Any) -> tuple[list[Any], bool]:
    """The reports of a body: `{reports: [...]}` (1 to 10,000), or one report as the body.
    Returns (items, batch): a single report's errors name its fields alone."""
    if isinstance(payload, dict) and "reports" in payload:
        return batch_items(payload, key="reports", limit=MAX_REPORTS), True
    if not isinstance(payload, dict):
        raise BatchError({"non_field_errors": ["body must be a JSON object"]})
    return [payload], False


def parse_stall_batch(payload: Any, *, now: dt.datetime) -> list[StallReport]:
    """Parse a stall report or `{reports: [...]}`; raise BatchError naming
    `reports[i].field` (a single report's `field`) for every problem. A stack's frames
    past the innermost 64 are dropped unread."""
    items, batch = stall_items(payload)
    errors = _Errors("reports")
    stacks: dict[bytes, Stack | None] = {}  # raw frames → parsed: a batch repeats its stacks
    parsed: list[StallReport] = []
    for i, raw in enumerate(items):
        where = f"reports[{i}]" if batch else ""
        if not isinstance(raw, dict):
            errors.add(where or "non_field_errors", "must be an object")
            continue
        before = len(errors.found)
        job = _read(raw, where, errors, "job", _bounded(INT64, 1), required=True)
        node = _read(raw, where, errors, "node", _hostname, required=True)
        ts = _read(raw, where, errors, "ts", lambda v: not_future(parse_ts(v), now), required=True)
        rank = _read(raw, where, errors, "rank", _bounded(MAX_WORLD - 1), required=True)
        step = _read(raw, where, errors, "last_step", _bounded(INT64), required=True, nullable=True)
        stalled_s = _read(
            raw,
            where,
            errors,
            "stalled_s",
            lambda v: number(v, minimum=0, maximum=DURATION_S),
            required=True,
            nullable=True,
        )
        in_collective = _read(
            raw, where, errors, "in_collective", _boolean, required=True, nullable=True
        )
        resumed = _read(raw, where, errors, "resumed", _boolean, required=False)
        world = _read(raw, where, errors, "world_size", _bounded(MAX_WORLD, 1), required=False)
        stack = _stack(raw, where, errors, stacks)
        if rank is not None and world is not None and rank >= world:
            errors.add(
                f"{where}.rank" if where else "rank", f"must be less than world_size ({world})"
            )
        if len(errors.found) == before:
            if in_collective is None:
                in_collective = bool(stack is not None and stack.collective)
            parsed.append(
                StallReport(
                    job, node, ts, rank, step, stalled_s, stack, in_collective, bool(resumed), world
                )
            )
        if errors.full:
            break
    errors.raise_any()
    return parsed


def _stack(
    raw: dict[str, Any], where: str, errors: _Errors, seen: dict[bytes, Stack | None]
) -> Stack | None:
    """The report's stack, its innermost MAX_FRAMES frames validated (None when empty)."""
    key = f"{where}.stack" if where else "stack"
    frames = raw.get("stack")
    if not isinstance(frames, list):
        errors.add(key, "this field is required" if frames is None else "must be a list")
        return None
    first = max(0, len(frames) - MAX_FRAMES)
    kept = frames[first:]
    try:
        cache_key = orjson.dumps(kept)
    except TypeError:  # not JSON-like (cannot come from a JSON body)
        cache_key = b""
    if cache_key and cache_key in seen:
        return seen[cache_key]
    parsed: list[Frame] = []
    before = len(errors.found)
    for j, item in enumerate(kept, start=first):
        at = f"{key}[{j}]"
        if not isinstance(item, dict):
            errors.add(at, "must be an object {file, function, line}")
            continue
        file = _read(item, at, errors, "file", _text(FILE_LENGTH), required=True)
        function = _read(item, at, errors, "function", _text(FUNCTION_LENGTH), required=True)
        line = _read(item, at, errors, "line", _bounded(INT32), required=True)
        if file is not None and function is not None and line is not None:
            parsed.append(Frame(file, function, line))
        if errors.full:
            return None
    if len(errors.found) != before:
        return None
    stack = stack_of(tuple(parsed)) if parsed else None
    if cache_key:
        seen[cache_key] = stack
    return stack


def _text(max_length: int) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise ValueError("must be a non-empty string")
        if len(value) > max_length:
            raise ValueError(f"must be at most {max_length:,} characters")
        if "\x00" in value:
            raise ValueError("must not contain NUL")
        return value

    return parse
