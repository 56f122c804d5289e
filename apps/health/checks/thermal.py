"""`thermal`: a GPU too hot in consecutive runs (docs/checks.md, `thermal`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from apps.health import inputs
from apps.health.checks.base import CheckSpec, Context
from apps.health.detectors import Finding, thermal
from apps.health.detectors.findings import GPU
from apps.health.detectors.thermal import WITHIN
from apps.health.thresholds import Shared, threshold
from apps.incidents.choices import Category
from apps.telemetry.monitored import Needed

KIND = "thermal"
WHY = _("the exporter's counters file omits it, or the GPU or its source cannot report it")


@dataclass(frozen=True)
class ThermalLimits(Shared):
    """The thermal check's thresholds (docs/checks.md, Thresholds), besides those every check
    shares."""

    temp_c: float = threshold(90, _("GPU temperature from"), "°C", check=KIND, lo=1, hi=150)
    mem_temp_c: float = threshold(
        95, _("Memory (HBM) temperature from"), "°C", check=KIND, lo=1, hi=150
    )
    thermal_runs: int = threshold(
        2, _("Too hot in this many runs in a row"), _("runs"), check=KIND, lo=1, hi=1_000
    )


def run(ctx: Context) -> list[Finding]:
    """The latest temperatures of the GPUs to judge and how many runs in a row each was hot.
    A fresh GPU under both limits whose stored result is the pass "within limits" would
    pass again unchanged (its streak is 0): it is counted, not loaded
    (docs/checks.md, Candidates)."""
    limits = ctx.limits
    picked = inputs.gpus_candidates(
        ctx.cluster,
        ctx.kind,
        ("temp_c", "mem_temp_c"),
        passing=Q(v_temp_c__lt=limits.temp_c, v_mem_temp_c__lt=limits.mem_temp_c),
        message=WITHIN,
        fresh_after=ctx.now - dt.timedelta(seconds=limits.heartbeat_s),
        skip_hosts=ctx.in_maintenance,
    )
    ctx.unchanged += picked.unchanged
    return thermal(picked.gpus, now=ctx.now, limits=limits, hot_runs=ctx.streaks("hot_runs"))


SPEC = CheckSpec(
    kind=KIND,
    limits=ThermalLimits,
    label=_("Thermal"),
    order=60,
    target=GPU,
    categories=(Category.GPU_THERMAL,),
    run=run,
    needs=(
        Needed(_("Temperature"), ("temp_c",), KIND, _("thermal"), WHY),
        Needed(_("Memory temperature"), ("mem_temp_c",), KIND, _("thermal"), WHY),
    ),
    pulls=frozenset({"temp_c", "mem_temp_c"}),
)
