"""What one `Reporter.step()` becomes on the wire (docs/agent.md): the job-wide sample, the
node's sample, or nothing when the caller's values are not numbers the server takes. Pure:
no I/O, no state; the Reporter's sender thread calls it, never the training thread."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

# A buffered step: (ts in µs since the epoch, step, step_time_s, tokens_per_s, loss,
# grad_norm, compute_s), exactly as the caller gave them (converted on the sender thread).
Raw = tuple[int, Any, Any, Any, Any, Any, Any]


def iso_us(us: int) -> str:
    """Microseconds since the epoch → `2026-11-23T08:00:00.000001Z`."""
    return (_EPOCH + dt.timedelta(microseconds=us)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def number(value: Any, *, finite: bool) -> float | None:
    """A caller's value (a float, an int, a 0-d tensor …) as a float; None when it is None or
    cannot be one, or (with `finite`) is not a finite number ≥ 0."""
    if value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError, RuntimeError):
        return None
    if finite and not (math.isfinite(out) and out >= 0):
        return None
    return out


def step_samples(
    raw: Raw, prev_us: int | None, *, job_wide: bool, per_node: bool, node: str
) -> list[dict[str, Any]] | None:
    """The samples a step is sent as; None when it has no step number, or no step time (given,
    or the time since the previous step) or token rate that is a number ≥ 0."""
    us, step, step_time, tps, loss, grad_norm, compute = raw
    try:
        step_n = int(step)
    except (TypeError, ValueError, RuntimeError):
        return None
    step_time_s = number(step_time, finite=True)
    if step_time is None and prev_us is not None:
        step_time_s = (us - prev_us) / 1e6
    if step_time_s is None or step_n < 0:
        return None
    out: list[dict[str, Any]] = []
    common = {"ts": iso_us(us), "step": step_n, "step_time_s": step_time_s}
    if job_wide:
        tokens = number(tps, finite=True)
        if tokens is None:
            return None
        sample = {**common, "tokens_per_s": tokens}
        for name, value in (("loss", loss), ("grad_norm", grad_norm)):
            converted = number(value, finite=False)
            if converted is not None:
                sample[name] = converted
        out.append(sample)
    if per_node:
        mine: dict[str, Any] = {**common, "node": node}
        compute_s = number(compute, finite=True)
        if compute_s is not None:
            mine["compute_s"] = compute_s
        out.append(mine)
    return out
