"""`thermal`: a GPU too hot in consecutive runs (docs/checks.md, `thermal`) — one hot sample is not
enough."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from apps.health.detectors.findings import Finding, Outcome, gpu_target, number, passed, warned
from apps.health.detectors.gpus import GpuLatest
from apps.health.thresholds import Limits
from apps.incidents.choices import Category, Severity

KIND = "thermal"
HOT = Outcome(Category.GPU_THERMAL, Severity.SEV4)


def thermal(
    gpus: Sequence[GpuLatest],
    *,
    now: dt.datetime,
    limits: Limits,
    hot_runs: Mapping[str, int] | None = None,
) -> list[Finding]:
    """A GPU at or over the temperature limits (fresh values only) in `thermal_runs`
    consecutive runs warns (`gpu_thermal`). `hot_runs` is each target's count of hot runs
    in a row up to the previous run (stored in its result's details as `hot_runs`)."""
    before = hot_runs or {}
    out = []
    for gpu in gpus:
        if gpu.updated_at is None or (now - gpu.updated_at).total_seconds() > limits.heartbeat_s:
            continue
        temp, mem = number(gpu.metrics.get("temp_c")), number(gpu.metrics.get("mem_temp_c"))
        target = gpu_target(gpu.node, gpu.index)
        hot = []
        if temp is not None and temp >= limits.temp_c:
            hot.append(f"GPU {temp:g} °C ≥ {limits.temp_c:g}")
        if mem is not None and mem >= limits.mem_temp_c:
            hot.append(f"HBM {mem:g} °C ≥ {limits.mem_temp_c:g}")
        runs = before.get(target, 0) + 1 if hot else 0
        details = {"temp_c": temp, "mem_temp_c": mem, "hot_runs": runs}
        if runs >= limits.thermal_runs:
            message = f"GPU {gpu.index}: " + ", ".join(hot) + f" ({runs} runs in a row)"
            out.append(warned(KIND, target, message, details, outcome=HOT, node=gpu.node))
        elif hot:
            message = f"GPU {gpu.index}: " + ", ".join(hot) + " once; warns if it stays"
            out.append(passed(KIND, target, message, details, node=gpu.node))
        else:
            out.append(passed(KIND, target, "within limits", details, node=gpu.node))
    return out
