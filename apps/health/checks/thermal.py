"""`thermal`: a GPU too hot in consecutive runs (docs/checks.md, `thermal`)."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from apps.health import inputs
from apps.health.checks.base import CheckSpec, Context
from apps.health.detectors import Finding, thermal
from apps.health.detectors.findings import GPU
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
    """Every GPU's latest temperatures and how many runs in a row each was hot."""
    gpus = inputs.gpus_latest(ctx.cluster, ("temp_c", "mem_temp_c"))
    return thermal(gpus, now=ctx.now, limits=ctx.limits, hot_runs=ctx.streaks("hot_runs"))


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
