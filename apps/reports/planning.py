"""Checkpoint advice (Young/Daly) and what-if projections — pure, first-order models.

With checkpoint cost C (seconds a save blocks training), checkpoint interval τ and mean time
between failures M, the share of time lost is about C/τ (saving) + τ/(2M) (rework: on
average half an interval is redone per failure) + R/M (recovery R per failure). The interval
that minimises it is τ* = √(2·C·M) (Young 1974; Daly 2006 for the higher-order terms).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.translation import gettext as _

WEEK_HOURS = 168.0


def optimal_interval_s(cost_s: float, mtbf_s: float) -> float:
    """Young/Daly: √(2 × checkpoint cost × MTBF)."""
    return math.sqrt(2.0 * cost_s * mtbf_s)


def waste_share(interval_s: float, cost_s: float, mtbf_s: float) -> float:
    """Share of time lost to saving and rework at this interval (C/τ + τ/2M)."""
    return cost_s / interval_s + interval_s / (2.0 * mtbf_s)


@dataclass(frozen=True)
class Advice:
    """A job's current and advised checkpoint interval and what the change is worth."""

    cost_s: float
    current_interval_s: float
    optimal_interval_s: float
    mtbf_hours: float
    mtbf_source: str
    current_waste: float
    optimal_waste: float
    gpu_hours_saved_per_week: float


def checkpoint_advice(
    *,
    gpu_count: int,
    saves: Sequence[tuple[float, float]],
    mtbf_hours: float,
    mtbf_source: str,
) -> Advice | None:
    """From a job's checkpoints as (epoch seconds, blocking seconds): mean cost, median
    interval, Young/Daly's interval for this MTBF, and the GPU-hours a week it would save.
    None with fewer than two checkpoints or no positive cost."""
    if len(saves) < 2 or mtbf_hours <= 0:
        return None
    ordered = sorted(saves)
    gaps = [b[0] - a[0] for a, b in zip(ordered, ordered[1:], strict=False) if b[0] > a[0]]
    cost = statistics.fmean(s[1] for s in ordered)
    if not gaps or cost <= 0:
        return None
    current = statistics.median(gaps)
    mtbf_s = mtbf_hours * 3600.0
    best = optimal_interval_s(cost, mtbf_s)
    now_waste, best_waste = waste_share(current, cost, mtbf_s), waste_share(best, cost, mtbf_s)
    return Advice(
        cost_s=cost,
        current_interval_s=current,
        optimal_interval_s=best,
        mtbf_hours=mtbf_hours,
        mtbf_source=mtbf_source,
        current_waste=now_waste,
        optimal_waste=best_waste,
        gpu_hours_saved_per_week=gpu_count * WEEK_HOURS * (now_waste - best_waste),
    )


@dataclass(frozen=True)
class Projection:
    """What a job of `gpus` GPUs should expect on this cluster."""

    gpus: int
    nodes: int
    job_mttf_hours: float
    interruptions_per_week: float
    optimal_interval_s: float
    expected_effective_rate: float | None  # None: beyond the model (`beyond` says why)
    uptime_share: float  # MTTF ÷ (MTTF + MTTR): the most a job can run, before checkpoints
    beyond: str = ""  # why the first-order model does not hold here; "" when it does


def what_if(
    *,
    gpus: int,
    gpus_per_node: int,
    node_mtbf_hours: float,
    mttr_minutes: float,
    checkpoint_cost_s: float,
) -> Projection:
    """Nodes fail in series: a job of N nodes fails every node MTBF / N hours. Checkpointing
    at τ* the expected effective rate is 1 − √(2C/M) − R/M. That first-order model assumes a
    failure is rare within a checkpoint interval and within a repair: where the repair time
    or τ* reaches the MTTF, or the lost share reaches 1, it has left its range — the rate is
    None and `beyond` says why (the uptime share M ÷ (M + R) still bounds it from above)."""
    nodes = max(1, math.ceil(gpus / gpus_per_node))
    mttf_h = node_mtbf_hours / nodes
    mtbf_s = mttf_h * 3600.0
    repair_s = mttr_minutes * 60.0
    tau = optimal_interval_s(checkpoint_cost_s, mtbf_s)
    lost = waste_share(tau, checkpoint_cost_s, mtbf_s) + repair_s / mtbf_s
    if repair_s >= mtbf_s:
        beyond = _("a repair takes longer than the job runs between failures")
    elif tau >= mtbf_s:
        beyond = _("the checkpoint interval is longer than the job runs between failures")
    elif lost >= 1.0:
        beyond = _("saving, rework and repair would take all of the job's time")
    else:
        beyond = ""
    return Projection(
        gpus=gpus,
        nodes=nodes,
        job_mttf_hours=mttf_h,
        interruptions_per_week=WEEK_HOURS / mttf_h,
        optimal_interval_s=tau,
        expected_effective_rate=None if beyond else 1.0 - lost,
        uptime_share=mtbf_s / (mtbf_s + repair_s),
        beyond=beyond,
    )
