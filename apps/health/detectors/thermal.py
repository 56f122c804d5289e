"""`thermal`: a GPU too hot in consecutive runs (docs/checks.md, `thermal`) — one hot sample is not
enough."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from apps.health.detectors.findings import (
    Finding,
    Outcome,
    gpu_target,
    number,
    passed,
    warned,
)
from apps.health.detectors.gpus import GpuLatest
from apps.incidents.choices import Category, Severity
from apps.telemetry.exporters import cannot_report

if TYPE_CHECKING:  # the check's thresholds, declared by its plug-in
    from apps.health.checks.thermal import ThermalLimits

KIND = "thermal"
HOT = Outcome(Category.GPU_THERMAL, Severity.SEV4)
# A GPU that reports both temperatures, under the limits: what the plug-in's candidates
# query takes as passing unchanged (checks/thermal.py).
WITHIN = "within limits"


def thermal(
    gpus: Sequence[GpuLatest],
    *,
    now: dt.datetime,
    limits: ThermalLimits,
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
        elif temp is None and mem is None:  # every exporter KUAE reads publishes one
            message = "no temperature reported: not checked"
            out.append(passed(KIND, target, message, details, node=gpu.node))
        else:
            message = WITHIN + _not_reported(gpu, temp, mem)
            out.append(passed(KIND, target, message, details, node=gpu.node))
    return out


def _not_reported(gpu: GpuLatest, temp: float | None, mem: float | None) -> str:
    """What of the two temperatures was not judged, and why, for a passing GPU's message
    (' (HBM temperature not reported by <exporter>)'); '' when both were."""
    name, label = (
        ("temp_c", "GPU temperature") if temp is None else ("mem_temp_c", "HBM temperature")
    )
    if temp is not None and mem is not None:
        return ""
    exporter = cannot_report(gpu.source, (name,))
    return f" ({label} not reported by {exporter})" if exporter else f" ({label} not reported)"
