"""Every check threshold, defined once: name, default, label, unit, bounds and its check.

The detectors read them as `Limits`; a cluster's own values are the overrides stored on its
`Thresholds` row; the form operators edit on the health page is built from the same
definitions, grouped by the check each belongs to (its `check`, a kind of
`apps.health.checks`). Adding a threshold is one field here. Pure: no database.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any


def _t(
    default: float,
    label: str,
    unit: str = "",
    *,
    check: str,
    lo: float = 0,
    hi: float,
    above_lo: bool = False,
) -> Any:
    """A threshold of `check` (a check's kind, or `*` for every check): its default and how
    it is shown and bounded (`lo` < or ≤ value ≤ `hi`; every threshold has both bounds, so
    no value typed into the form can make a check never fire or fire on everything)."""
    return field(
        default=default,
        metadata={
            "label": label,
            "unit": unit,
            "check": check,
            "lo": lo,
            "hi": hi,
            "above_lo": above_lo,
        },
    )


@dataclass(frozen=True)
class Limits:
    """The thresholds one check run uses (defaults: docs/checks.md). Each names the check it
    belongs to (`*`: used by every check), which groups it on the form and in the docs."""

    heartbeat_s: int = _t(180, "Silent node after", "s", check="*", lo=1, hi=86_400)
    heartbeat_cluster_share: float = _t(
        0.10,
        "Monitoring path down when more nodes are silent than",
        "share",
        check="heartbeat",
        hi=1,
        above_lo=True,
    )
    hang_min_s: int = _t(
        600, "Hang: no progress for at least", "s", check="job_hang", lo=1, hi=86_400
    )
    hang_step_factor: float = _t(
        10.0, "Hang: or more than this many step times", "×", check="job_hang", lo=1, hi=1_000
    )
    hang_window: int = _t(
        50, "Hang: step times in the median", "samples", check="job_hang", lo=1, hi=10_000
    )
    hang_no_metrics_s: int = _t(
        1800, "Hang: a job with no sample after it started", "s", check="job_hang", lo=1, hi=604_800
    )
    slow_factor: float = _t(
        1.10,
        "Slow node: compute time over the job's median",
        "×",
        check="slow_node",
        lo=1,
        hi=100,
        above_lo=True,
    )
    slow_samples: int = _t(
        20, "Slow node: newest samples per node", "samples", check="slow_node", lo=1, hi=10_000
    )
    slow_min_samples: int = _t(
        5, "Slow node: samples a node needs", "samples", check="slow_node", lo=1, hi=10_000
    )
    slow_min_nodes: int = _t(
        4, "Slow node: nodes a job needs", "nodes", check="slow_node", lo=2, hi=100_000
    )
    gemm_factor: float = _t(
        0.90,
        "Slow GPU: GEMM throughput under its model's median",
        "×",
        check="slow_node",
        hi=1,
        above_lo=True,
    )
    sdc_round_s: int = _t(
        600, "Checksum vote: one probe round lasts", "s", check="sdc", lo=1, hi=86_400
    )
    link_errors_growth: int = _t(
        100, "NVLink CRC or PCIe replay growth per run over", "", check="gpu_errors", hi=10**9
    )
    gpu_missing_runs: int = _t(
        2, "A missing GPU fails after this many runs", "runs", check="gpu_errors", lo=1, hi=1_000
    )
    temp_c: float = _t(90, "GPU temperature from", "°C", check="thermal", lo=1, hi=150)
    mem_temp_c: float = _t(95, "Memory (HBM) temperature from", "°C", check="thermal", lo=1, hi=150)
    thermal_runs: int = _t(
        2, "Too hot in this many runs in a row", "runs", check="thermal", lo=1, hi=1_000
    )
    fabric_flaps_per_min: float = _t(
        5.0, "Flapping link: link error recoveries a minute over", "/min", check="fabric", hi=10**6
    )
    fabric_symbol_errors_per_s: float = _t(
        10.0, "Symbol errors a second over", "/s", check="fabric", hi=10**9
    )
    fabric_rcv_errors_per_s: float = _t(
        10.0, "Receive errors a second over", "/s", check="fabric", hi=10**9
    )
    fabric_xmit_discards_per_s: float = _t(
        100.0, "Transmit discards a second over", "/s", check="fabric", hi=10**9
    )
    fabric_ack_timeouts_per_s: float = _t(
        1.0, "Local ACK timeouts a second over", "/s", check="fabric", hi=10**9
    )
    fabric_rnr_naks_per_s: float = _t(
        1.0, "RNR NAK retries a second over", "/s", check="fabric", hi=10**9
    )
    fabric_warns_to_fail: int = _t(
        3,
        "A port that warned this many times in an hour fails",
        "warns",
        check="fabric",
        lo=1,
        hi=1_000,
    )
    quiet_resolve_s: int = _t(
        1800, "Warnings resolve after staying clear for", "s", check="*", lo=60, hi=604_800
    )
    drain_cap_share: float = _t(
        0.02,
        "Automatic drains per hour, as a share of nodes",
        "share",
        check="*",
        hi=1,
        above_lo=True,
    )


FIELDS: tuple[dataclasses.Field[Any], ...] = dataclasses.fields(Limits)
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


def fields_of(check: str) -> tuple[dataclasses.Field[Any], ...]:
    """The thresholds that belong to `check` (a kind, or `*` for those every check uses)."""
    return tuple(f for f in FIELDS if f.metadata["check"] == check)
