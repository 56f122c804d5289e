"""How a check declares its thresholds, and the thresholds every check shares.

A check plug-in declares its own thresholds in its module (`apps/health/checks/<kind>.py`),
as a frozen dataclass that extends `Shared` with one `threshold(...)` field each: name,
default, label, unit, bounds and the check it belongs to (label and a worded unit
marked for translation, read in the page's language). `apps.health.limits` puts every
plug-in's together into `Limits`, what one run reads, and the rules for a cluster's
overrides (docs/checks.md, Writing a check). Pure: no database.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext_lazy as _

from apps.common.words import Words


def threshold(
    default: float,
    label: Words,
    unit: Words = "",
    *,
    check: str,
    lo: float = 0,
    hi: float,
    above_lo: bool = False,
) -> Any:
    """A threshold of `check` (a check's kind, or `*` for those every check shares): its
    default and how it is shown and bounded (`lo` < or ≤ value ≤ `hi`; every threshold has
    both bounds, so no value typed into the form can make a check never fire or fire on
    everything)."""
    return field(
        default=default,
        metadata={
            "label": label,
            "unit": unit,
            "check": check,
            "lo": lo,
            "hi": hi,
            "above_lo": above_lo,
        },
    )


@dataclass(frozen=True)
class Shared:
    """The thresholds every check reads (docs/checks.md, Thresholds): each plug-in's own
    thresholds extend these."""

    heartbeat_s: int = threshold(180, _("Silent node after"), "s", check="*", lo=1, hi=86_400)
    quiet_resolve_s: int = threshold(
        1800, _("Warnings resolve after staying clear for"), "s", check="*", lo=60, hi=604_800
    )
    drain_cap_share: float = threshold(
        0.02,
        _("Automatic drains per hour, as a share of nodes"),
        _("share"),
        check="*",
        hi=1,
        above_lo=True,
    )


def declared(limits: type[Shared]) -> tuple[dataclasses.Field[Any], ...]:
    """The thresholds `limits` declares beyond those every check shares, in their order."""
    shared = {f.name for f in dataclasses.fields(Shared)}
    return tuple(f for f in dataclasses.fields(limits) if f.name not in shared)
