"""Model FLOPs utilisation (docs/formulas.md, MFU) — pure functions over plain values."""

from __future__ import annotations

import math
from collections.abc import Iterable


def finite(value: float | None) -> float | None:
    """`value`, or None (unknown) when it is missing or not finite: a figure derived from
    absurd stored inputs (1e300 FLOPs per token at 1e100 tokens/s) is never stored, drawn or
    answered as `Infinity` (docs/api.md, Conventions)."""
    return value if value is not None and math.isfinite(value) else None


def flops_per_token(*, flops_per_token: float | None, n_params: float | None) -> float | None:
    """The job's FLOPs per token: its own value, else 6 × n_params, else unknown."""
    if flops_per_token:
        return float(flops_per_token)
    if n_params:
        return 6.0 * float(n_params)
    return None


def mfu(
    *, fpt: float | None, tokens_per_s: float | None, gpu_count: int, peak_tflops_per_gpu: float
) -> float | None:
    """fpt × tokens/s / (GPUs × peak × 1e12); None when any input is missing or not finite."""
    if fpt is None or tokens_per_s is None or gpu_count <= 0 or peak_tflops_per_gpu <= 0:
        return None
    if not math.isfinite(tokens_per_s):
        return None
    return finite(fpt * tokens_per_s / (gpu_count * peak_tflops_per_gpu * 1e12))


def mfu_of(tokens_per_s: float | None, factor: float | None) -> float | None:
    """MFU from tokens/s and the job's `mfu_factor`; None when either is unknown or the
    product is not finite."""
    if tokens_per_s is None or factor is None:
        return None
    return finite(tokens_per_s * factor)


def mfu_factor(*, fpt: float | None, gpu_count: int, peak_tflops_per_gpu: float) -> float | None:
    """The constant that turns a job's tokens/s into MFU (so series convert in one multiply)."""
    return mfu(
        fpt=fpt, tokens_per_s=1.0, gpu_count=gpu_count, peak_tflops_per_gpu=peak_tflops_per_gpu
    )


def weighted_mean_mfu(samples: Iterable[tuple[float | None, float]]) -> float | None:
    """Mean of MFU values weighted by `step_time_s` — a job's `mean_mfu` (docs/formulas.md, MFU)."""
    total = weight = 0.0
    for value, step_time in samples:
        if value is None or not math.isfinite(value) or step_time <= 0:
            continue
        total += value * step_time
        weight += step_time
    return finite(total / weight) if weight else None
