"""What management reads the figures against (docs/formulas.md, Targets): floors, one table of them.

Every target is a floor — a figure at or above it meets it. An admin sets them per cluster
(`ClusterTargets`, in the Django admin); a cluster without its own reads the defaults below.
The 60% MFU of the best public runs is a reference line drawn beside MFU, never a target
and never a ceiling: an MFU above it is better still. Recovery in 10 minutes is likewise a
reference line on the chart of recovery time per week, not a target.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from django.utils.functional import lazy
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

HOURS_PER_DAY = 24.0
# The one table: report figure → (label, default floor). MTBF is the cluster's, in hours.
TABLE: dict[str, tuple[object, float]] = {
    "effective_rate": (_("Effective training rate"), 0.99),
    "mtbf_hours": (_("Cluster MTBF"), 15 * HOURS_PER_DAY),
    "availability": (_("GPU availability"), 0.99),
    "mean_mfu": ("MFU", 0.50),
}
DEFAULTS = {key: floor for key, (_, floor) in TABLE.items()}
MFU_REFERENCE = 0.60  # the best public figure: a reference line, not a target
MFU_REFERENCE_LABEL = lazy(
    lambda: gettext("best public figure %(value)s") % {"value": f"{MFU_REFERENCE:.0%}"}, str
)()
# Recovery "in minutes": a reference line on the chart of recovery time per week, not a target
# (docs/formulas.md, Recovery time and its parts).
RECOVERY_REFERENCE_MINUTES = 10.0
RECOVERY_REFERENCE_LABEL = lazy(
    lambda: (
        gettext("recovery in minutes: %(value)s min") % {"value": f"{RECOVERY_REFERENCE_MINUTES:g}"}
    ),
    str,
)()
# Localisation "in minutes": the one ceiling beside the floors. MTTL (detected → localised) at
# or under it meets it; the reliability page shows MTTL against it.
MTTL_GOAL_MINUTES = 10.0


@dataclass(frozen=True)
class Targets:
    """One cluster's floors: a figure meets its target when it is at least this."""

    effective_rate: float = DEFAULTS["effective_rate"]
    mtbf_hours: float = DEFAULTS["mtbf_hours"]
    availability: float = DEFAULTS["availability"]
    mean_mfu: float = DEFAULTS["mean_mfu"]
    mfu_reference: float = MFU_REFERENCE
    mttl_goal_minutes: float = MTTL_GOAL_MINUTES

    @property
    def mtbf_days(self) -> float:
        """The cluster MTBF floor in days, as people say it."""
        return self.mtbf_hours / HOURS_PER_DAY

    def met(self, key: str, value: float | None) -> bool | None:
        """Whether `value` meets the floor of figure `key`; None when there is no value."""
        return None if value is None else value >= getattr(self, key)

    def floors(self) -> dict[str, float]:
        """`{effective_rate, mtbf_hours, availability, mean_mfu}`: the API's `targets`."""
        out = asdict(self)
        out.pop("mfu_reference")
        out.pop("mttl_goal_minutes")
        return out


def target_text(key: str, floor: float) -> str:
    """'≥ 99%', 'cluster MTBF ≥ 15 d', 'MFU ≥ 50%': how a floor reads next to its figure."""
    if key == "mtbf_hours":
        days = floor / HOURS_PER_DAY
        return f"≥ {days:g} d" if days >= 1 else f"≥ {floor:g} h"
    return f"≥ {100 * floor:g}%"


def target_words(key: str, floor: float) -> str:
    """'target ≥ 99%': a target line's label on a chart, in the reader's language."""
    return gettext("target %(floor)s") % {"floor": target_text(key, floor)}
