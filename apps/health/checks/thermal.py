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
from apps.telemetry.prometheus_source import PullPlan

KIND = "thermal"
KEYS = ("temp_c", "mem_temp_c")
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


def _passing(limits: ThermalLimits) -> Q:
    """Both temperatures numbers under their limits (the candidates' annotations)."""
    return Q(v_temp_c__lt=limits.temp_c, v_mem_temp_c__lt=limits.mem_temp_c)


def pull_plan(ctx: Context) -> PullPlan | None:
    """From a cluster's Prometheus, read the GPUs at or over either limit and those of the
    nodes whose stored values or results could not give the verdict (a first run: every
    GPU); a GPU under both limits whose stored result is the pass "within limits" is left
    unread (docs/integrations.md, 2d: thresholds in the query)."""
    limits = ctx.limits
    read = inputs.hosts_to_read(
        ctx.cluster, ctx.kind, KEYS, passing=_passing(limits), message=WITHIN
    )
    if read is None:
        return None
    return PullPlan(over={"temp_c": limits.temp_c, "mem_temp_c": limits.mem_temp_c}, read=read)


def run(ctx: Context) -> list[Finding]:
    """The latest temperatures of the GPUs to judge and how many runs in a row each was hot.
    A fresh GPU under both limits whose stored result is the pass "within limits" would
    pass again unchanged (its streak is 0): it is counted, not loaded
    (docs/checks.md, Candidates)."""
    limits = ctx.limits
    picked = inputs.gpus_candidates(
        ctx.cluster,
        ctx.kind,
        KEYS,
        passing=_passing(limits),
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
    pulls=frozenset(KEYS),
    pull_plan=pull_plan,
)
