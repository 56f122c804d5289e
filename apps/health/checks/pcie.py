"""`pcie`: GPUs' and NICs' PCIe links trained below their maximum, and AER errors of every
reported device, from the nodes' host readings (docs/checks.md, `pcie`).

Each run judges every device's latest reading against the one the previous run judged
(kept on the reading's row, written with the run's findings). node_exporter publishes no
PCIe link or AER series: a cluster whose nodes never reported a PCIe reading (no
`kuae-agent run --host`) shows the check as "Not monitored" — never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from apps.health.checks.base import CheckSpec, Context
from apps.health.detectors.findings import Finding
from apps.health.detectors.pcie import DEVICE, WITHIN, pcie, pcie_target
from apps.health.host_readings import Unchanged, host_histories, unless_reported
from apps.health.thresholds import Shared, threshold
from apps.incidents.choices import Category
from apps.telemetry.host_series import pull_name

KIND, LABEL = "pcie", _("PCIe links and AER")
READING = "pcie"  # the kind of host reading it judges
NOT_MONITORED = _(
    "no node of this cluster has reported its PCIe devices (not reported by node_exporter; "
    "kuae-agent run --host reads them)"
)


@dataclass(frozen=True)
class PcieLimits(Shared):
    """The PCIe check's thresholds (docs/checks.md, Thresholds)."""

    pcie_aer_correctable_per_hour: float = threshold(
        100, _("AER correctable errors of a device within an hour over"), "/h", check=KIND, hi=10**9
    )


def run(ctx: Context) -> list[Finding]:
    """Every PCIe device's latest reading against the one judged last; those whose reading
    is the judged one and passed are counted, not loaded (docs/checks.md, Candidates): a
    link's width and speed are judged within the reading, its counters by their growth."""
    devices = host_histories(ctx, READING, pcie_target, unchanged=Unchanged(DEVICE, WITHIN))
    return pcie(devices, limits=ctx.limits, now=ctx.now)


SPEC = CheckSpec(
    kind=KIND,
    limits=PcieLimits,
    label=LABEL,
    order=90,
    target=DEVICE,
    categories=(Category.GPU, Category.NIC, Category.IO_EXPANSION_BOARD),
    run=run,
    not_monitored=unless_reported(READING, NOT_MONITORED),
    pulls=frozenset({pull_name(READING)}),
)
