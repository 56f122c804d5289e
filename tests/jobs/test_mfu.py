"""MFU (docs/formulas.md, MFU) — pure functions."""

from __future__ import annotations

import math

from apps.jobs.mfu import flops_per_token, mfu, weighted_mean_mfu


def test_flops_per_token_prefers_the_jobs_value():
    assert flops_per_token(flops_per_token=1.5e12, n_params=70e9) == 1.5e12
    assert flops_per_token(flops_per_token=None, n_params=70e9) == 420e9
    assert flops_per_token(flops_per_token=None, n_params=None) is None


def test_mfu_matches_the_formula():
    # Llama 3 405B: 16,384 H100s at ~38-43% MFU; 2.43e12 FLOPs/token.
    value = mfu(fpt=6 * 405e9, tokens_per_s=2.6e6, gpu_count=16384, peak_tflops_per_gpu=989.4)
    assert math.isclose(value, 6 * 405e9 * 2.6e6 / (16384 * 989.4e12))
    assert 0.38 < value < 0.40


def test_mfu_is_none_without_inputs():
    assert mfu(fpt=None, tokens_per_s=1.0, gpu_count=8, peak_tflops_per_gpu=1) is None
    assert mfu(fpt=1.0, tokens_per_s=math.inf, gpu_count=8, peak_tflops_per_gpu=1) is None
    assert mfu(fpt=1.0, tokens_per_s=1.0, gpu_count=0, peak_tflops_per_gpu=1) is None


def test_mean_mfu_is_weighted_by_step_time():
    assert weighted_mean_mfu([(0.5, 1.0), (0.2, 3.0)]) == (0.5 + 0.6) / 4
    assert weighted_mean_mfu([(None, 1.0), (math.nan, 2.0)]) is None
    assert weighted_mean_mfu([]) is None


def test_bucket_extremes():
    import datetime as dt

    from apps.jobs.extremes import bucket_extremes

    t0 = dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.UTC)
    pts = [(t0 + dt.timedelta(seconds=60 * i), v) for i, v in enumerate([5, 1, 9, 9, 3, 7, 7, 2])]
    # bucket 08:00-08:05: values 5 1 9 9 3 → min 1 at 1 min, max 9 at 2 min (earliest tie)
    # bucket 08:05-08:10: values 7 7 2 → min 2 at 7 min, max 7 at 5 min
    got = sorted(int((ts - t0).total_seconds() // 60) for ts in bucket_extremes(pts))
    assert got == [1, 2, 5, 7]
