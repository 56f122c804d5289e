"""`clock`: each node's clock, by its offset and synchronisation from the nodes' host
readings (docs/checks.md, `clock`).

Counts the runs in a row a clock was not synchronised in its stored result. A cluster
whose nodes never reported a clock reading shows the check as "Not monitored" — never a
pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from apps.health.checks.base import CheckSpec, Context
from apps.health.detectors.clock import CLOCK, clock, clock_target
from apps.health.detectors.findings import Finding
from apps.health.host_readings import host_histories, unless_reported
from apps.health.thresholds import Shared, threshold
from apps.incidents.choices import Category
from apps.telemetry.host_series import pull_name

KIND, LABEL = "clock", _("Clock")
READING = "clock"  # the kind of host reading it judges
NOT_MONITORED = _(
    "no node of this cluster has reported its clock (host readings: kuae-agent run --host, "
    "or node_exporter's timex collector)"
)


@dataclass(frozen=True)
class ClockLimits(Shared):
    """The clock check's thresholds (docs/checks.md, Thresholds)."""

    clock_max_offset_s: float = threshold(
        0.5, _("Clock offset either way over"), "s", check=KIND, hi=86_400, above_lo=True
    )


def run(ctx: Context) -> list[Finding]:
    """Every clock's latest reading, with how many runs in a row it was not synchronised."""
    clocks = host_histories(ctx, READING, clock_target, runs_key="unsynced_runs")
    return clock(clocks, limits=ctx.limits)


SPEC = CheckSpec(
    kind=KIND,
    limits=ClockLimits,
    label=LABEL,
    order=100,
    target=CLOCK,
    categories=(Category.OTHER,),
    run=run,
    not_monitored=unless_reported(READING, NOT_MONITORED),
    pulls=frozenset({pull_name(READING)}),
)
