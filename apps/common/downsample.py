"""Shape-preserving downsampling of chart series (MinMaxLTTB from tsdownsample)."""

from __future__ import annotations

import numpy as np
from tsdownsample import MinMaxLTTBDownsampler


def downsample_indices(x: np.ndarray, y: np.ndarray, n_out: int) -> np.ndarray:
    """Indices of at most `n_out` points that keep the series' shape (peaks and dips).

    `x` must be sorted ascending. Non-finite `y` values are replaced for the selection only,
    so gaps and spikes still get picked.
    """
    n = len(x)
    if n <= n_out:
        return np.arange(n)
    if n_out < 3:
        return np.linspace(0, n - 1, n_out).astype(np.int64)
    y = np.nan_to_num(np.asarray(y, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    sampler = MinMaxLTTBDownsampler()  # type: ignore[no-untyped-call]
    picked: np.ndarray = sampler.downsample(np.asarray(x, dtype=np.float64), y, n_out=n_out)
    return picked
