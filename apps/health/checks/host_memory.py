"""`host_memory`: a node's memory controllers, by EDAC's correctable and uncorrectable
error counts from its host readings (docs/checks.md, `host_memory`).

Each run judges every controller's latest reading against the one the previous run judged
(kept on the reading's row, written with the run's findings). A cluster whose nodes never
reported a memory reading shows the check as "Not monitored" on its health page — never a
pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from apps.health.checks.base import CheckSpec, Context
from apps.health.detectors.findings import Finding
from apps.health.detectors.host_memory import MC, WITHIN, host_memory, mc_target
from apps.health.host_readings import Unchanged, host_histories, unless_reported
from apps.health.thresholds import Shared, threshold
from apps.incidents.choices import Category
from apps.telemetry.host_series import pull_name

KIND, LABEL = "host_memory", _("Host memory (EDAC)")
READING = "memory"  # the kind of host reading it judges
NOT_MONITORED = _(
    "no node of this cluster has reported its memory controllers (host readings: "
    "kuae-agent run --host, or node_exporter's edac collector)"
)


@dataclass(frozen=True)
class HostMemoryLimits(Shared):
    """The host memory check's thresholds (docs/checks.md, Thresholds)."""

    host_ce_per_hour: float = threshold(
        100, _("Correctable memory errors within an hour over"), "/h", check=KIND, hi=10**9
    )


def run(ctx: Context) -> list[Finding]:
    """Every memory controller's latest reading against the one judged last; those whose
    reading is the judged one and passed are counted, not loaded
    (docs/checks.md, Candidates)."""
    controllers = host_histories(ctx, READING, mc_target, unchanged=Unchanged(MC, WITHIN))
    return host_memory(controllers, limits=ctx.limits, now=ctx.now)


SPEC = CheckSpec(
    kind=KIND,
    limits=HostMemoryLimits,
    label=LABEL,
    order=80,
    target=MC,
    categories=(Category.HOST_MEMORY,),
    run=run,
    not_monitored=unless_reported(READING, NOT_MONITORED),
    pulls=frozenset({pull_name(READING)}),
)
