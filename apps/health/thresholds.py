"""Every check threshold, defined once: name, default (docs/checks.md, Thresholds), label, unit and
bounds.

The detectors read them as `Limits`; a cluster's own values are the overrides stored on its
`Thresholds` row; the form operators edit on the health page is built from the same
definitions. Adding a threshold is one line here. Pure: no database.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


def _t(
    default: float,
    label: str,
    unit: str = "",
    *,
    lo: float = 0,
    hi: float | None = None,
    above_lo: bool = False,
) -> Any:
    """A threshold: its default and how it is shown and bounded (`lo` < or ≤ value ≤ `hi`)."""
    return field(
        default=default,
        metadata={"label": label, "unit": unit, "lo": lo, "hi": hi, "above_lo": above_lo},
    )


@dataclass(frozen=True)
class Limits:
    """The thresholds one check run uses (docs/checks.md, Thresholds)."""

    heartbeat_s: int = _t(180, "Silent node after", "s", lo=1)
    heartbeat_cluster_share: float = _t(
        0.10, "Monitoring path down when more nodes are silent than", "share", hi=1, above_lo=True
    )
    hang_min_s: int = _t(600, "Hang: no progress for at least", "s", lo=1)
    hang_step_factor: float = _t(10.0, "Hang: or more than this many step times", "×", lo=1)
    hang_window: int = _t(50, "Hang: step times in the median", "samples", lo=1)
    hang_no_metrics_s: int = _t(1800, "Hang: a job with no sample after it started", "s", lo=1)
    slow_factor: float = _t(
        1.10, "Slow node: compute time over the job's median", "×", lo=1, above_lo=True
    )
    slow_samples: int = _t(20, "Slow node: newest samples per node", "samples", lo=1)
    slow_min_samples: int = _t(5, "Slow node: samples a node needs", "samples", lo=1)
    slow_min_nodes: int = _t(4, "Slow node: nodes a job needs", "nodes", lo=2)
    gemm_factor: float = _t(
        0.90, "Slow GPU: GEMM throughput under its model's median", "×", hi=1, above_lo=True
    )
    sdc_round_s: int = _t(600, "Checksum vote: one probe round lasts", "s", lo=1)
    link_errors_growth: int = _t(100, "NVLink CRC or PCIe replay growth per run over", "", lo=0)
    gpu_missing_runs: int = _t(2, "A missing GPU fails after this many runs", "runs", lo=1)
    temp_c: float = _t(90, "GPU temperature from", "°C", lo=1, hi=150)
    mem_temp_c: float = _t(95, "Memory (HBM) temperature from", "°C", lo=1, hi=150)
    thermal_runs: int = _t(2, "Too hot in this many runs in a row", "runs", lo=1)
    quiet_resolve_s: int = _t(1800, "Warnings resolve after staying clear for", "s", lo=60)
    drain_cap_share: float = _t(
        0.02, "Automatic drains per hour, as a share of nodes", "share", hi=1, above_lo=True
    )


FIELDS: tuple[dataclasses.Field[Any], ...] = dataclasses.fields(Limits)
DEFAULTS: dict[str, float] = {f.name: f.default for f in FIELDS}  # type: ignore[misc]


def check_value(name: str, value: float) -> str | None:
    """Why `value` is not allowed for threshold `name`, or None when it is."""
    meta = next(f.metadata for f in FIELDS if f.name == name)
    lo, hi = meta["lo"], meta["hi"]
    if meta["above_lo"] and value <= lo:
        return f"must be above {lo:g}"
    if value < lo:
        return f"must be at least {lo:g}"
    if hi is not None and value > hi:
        return f"must be at most {hi:g}"
    return None


def limits_from(overrides: dict[str, Any]) -> Limits:
    """The defaults with a cluster's overrides; unknown or out-of-range values are ignored
    (a row edited by hand must never stop the checks)."""
    values: dict[str, Any] = {}
    for f in FIELDS:
        raw = overrides.get(f.name)
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            value = int(raw) if isinstance(f.default, int) else float(raw)
            if check_value(f.name, value) is None:
                values[f.name] = value
    return Limits(**values)
