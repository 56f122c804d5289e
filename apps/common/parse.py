"""Small typed parsers for hot-path batches: each raises ValueError with a 400-ready message."""

from __future__ import annotations

import math

_NONFINITE_WORDS = {
    "nan": math.nan,
    "infinity": math.inf,
    "-infinity": -math.inf,
    "inf": math.inf,
    "-inf": -math.inf,
}


def number(
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    allow_nonfinite: bool = False,
) -> float:
    """A JSON number (not a bool) in [minimum, maximum]; non-finite only when allowed (then
    also as words, and unbounded)."""
    if isinstance(value, str) and allow_nonfinite:
        word = value.strip().lower()
        if word in _NONFINITE_WORDS:
            return _NONFINITE_WORDS[word]
        raise ValueError("must be a number, NaN, Infinity or -Infinity")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    result = float(value)
    if not math.isfinite(result):
        if not allow_nonfinite:
            raise ValueError("must be finite")
        return result
    if minimum is not None and result < minimum:
        raise ValueError(f"must be ≥ {minimum:g}")
    if maximum is not None and result > maximum:
        raise ValueError(f"must be ≤ {bound_text(maximum)}")
    return result


def bound_text(value: float) -> str:
    """A bound as an error names it: 2,592,000, 1e+12."""
    value = float(value)
    return f"{int(value):,}" if value.is_integer() and abs(value) < 1e7 else f"{value:g}"


def integer(value: object, *, minimum: int | None = None) -> int:
    """A JSON integer (a float with no fraction is accepted)."""
    if isinstance(value, bool):
        raise ValueError("must be an integer")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise ValueError("must be an integer")
    if minimum is not None and value < minimum:
        raise ValueError(f"must be ≥ {minimum}")
    return value


def text(value: object, *, max_length: int = 253) -> str:
    """A non-empty string of bounded length."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    if len(value) > max_length:
        raise ValueError(f"must be at most {max_length} characters")
    return value.strip()


def node_name(value: object) -> str:
    """A node's hostname as a batch names it: `text`, in lower case (hostnames compare
    without regard to case; apps.common.hostnames.hostname_key)."""
    from apps.common.hostnames import hostname_key

    return hostname_key(text(value))


def batch_items(payload: object, *, key: str = "samples", limit: int) -> list:
    """The list under `key` of a batch body, checked for shape and size (BatchError)."""
    from apps.common.errors import BatchError

    if not isinstance(payload, dict):
        raise BatchError({"non_field_errors": ["body must be a JSON object"]})
    items = payload.get(key)
    if not isinstance(items, list) or not items:
        raise BatchError({key: ["must be a non-empty list"]})
    if len(items) > limit:
        raise BatchError({key: [f"at most {limit} items per batch"]})
    return items
