"""Every check's thresholds together: `Limits`, what one run of any check reads, and the
rules for the overrides a cluster stores (its `Thresholds` row) and the health page's form
edits. Each threshold is declared by its check's plug-in module, as
`apps.health.thresholds` describes; the form, the docs table (`manage.py docs_thresholds`)
and the bounds are read from here.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from apps.health.checks import PLUGINS, Limits
from apps.health.thresholds import Shared, declared

__all__ = [
    "DEFAULTS",
    "FIELDS",
    "Limits",
    "bounds",
    "check_value",
    "limits_from",
    "values_problems",
]

# Every threshold: those every check shares, then each plug-in's in the plug-ins' order.
FIELDS: tuple[dataclasses.Field[Any], ...] = (
    *dataclasses.fields(Shared),
    *(f for spec in PLUGINS for f in declared(spec.limits)),
)
DEFAULTS: dict[str, float] = {f.name: f.default for f in FIELDS}  # type: ignore[misc]


def _finite(value: float) -> bool:
    """Whether `value` is a real number (any int is: `math.isfinite` overflows on a huge one)."""
    return isinstance(value, int) or math.isfinite(value)


def bounds(name: str) -> str:
    """Threshold `name`'s allowed range in words, e.g. `from 1 to 86400`."""
    meta = next(f.metadata for f in FIELDS if f.name == name)
    start = "above" if meta["above_lo"] else "from"
    return f"{start} {meta['lo']:g} to {meta['hi']:g}"


def check_value(name: str, value: float) -> str | None:
    """Why `value` is not allowed for threshold `name`, or None when it is (a non-finite
    value is never allowed: NaN passes every comparison, infinity overflows a duration)."""
    meta = next(f.metadata for f in FIELDS if f.name == name)
    lo, hi = meta["lo"], meta["hi"]
    if not _finite(value):
        return f"must be a number {bounds(name)}"
    if meta["above_lo"] and value <= lo:
        return f"must be above {lo:g} (at most {hi:g})"
    if value < lo:
        return f"must be at least {lo:g} (at most {hi:g})"
    if value > hi:
        return f"must be at most {hi:g}"
    return None


def values_problems(values: object) -> dict[str, str]:
    """What is wrong with a stored set of overrides (name → value), by name: an unknown
    name, a value that is not a number (a whole one where the threshold counts), or one
    outside its bounds. Empty when every override may be saved."""
    if not isinstance(values, dict):
        return {"values": "must be an object of threshold name → number"}
    problems: dict[str, str] = {}
    for name, value in values.items():
        if name not in DEFAULTS:
            problems[str(name)] = "is not a threshold"
        elif not isinstance(value, int | float) or isinstance(value, bool):
            problems[name] = f"must be a number {bounds(name)}"
        elif isinstance(DEFAULTS[name], int) and _finite(value) and value != int(value):
            problems[name] = f"must be a whole number {bounds(name)}"
        elif problem := check_value(name, value):
            problems[name] = problem
    return problems


def limits_from(overrides: dict[str, Any]) -> Limits:
    """The defaults with a cluster's overrides; unknown, too-low or non-finite values are
    ignored (a row edited by hand must never stop the checks). A value above its upper
    bound is taken at the bound: a cluster that set, say, a week-long hang limit before the
    bounds existed keeps the nearest allowed value, not the far stricter default."""
    values: dict[str, Any] = {}
    for f in FIELDS:
        raw = overrides.get(f.name)
        if isinstance(raw, int | float) and not isinstance(raw, bool) and _finite(raw):
            raw = min(raw, f.metadata["hi"])  # before converting: float(10**400) overflows
            value = int(raw) if isinstance(f.default, int) else float(raw)
            if check_value(f.name, value) is None:
                values[f.name] = value
    return Limits(**values)
