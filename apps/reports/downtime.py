"""The failures' downtime by part — detect, localise, mitigate, restart — as the weekly page,
its PDF and its CSV show it (docs/formulas.md, Where the downtime went). Pure."""

from __future__ import annotations

from typing import Any

from apps.reports.choices import DOWNTIME_PARTS


def downtime_parts(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The failures' downtime by part, in order, for the page, the PDF and the CSV: each
    part's slug, label, span in words, GPU-hours and share of the downtime (None when there
    was no downtime) (docs/formulas.md, Where the downtime went)."""
    parts = report["downtime_breakdown_gpu_hours"]
    total = sum(parts.values())
    return [
        {
            "part": p.value,
            "label": str(p.label),
            "span": p.span,
            "gpu_hours": parts[p.value],
            "share": parts[p.value] / total if total > 0 else None,
        }
        for p in DOWNTIME_PARTS
    ]
