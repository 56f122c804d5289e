"""The ISO-week axis that the week-by-week charts share (reliability, effective rate): short
tick labels that fit a phone, and a note in each week that has no data, so an empty slot is
never read as a zero."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils.translation import gettext as _

from apps.common.charts import SERIES


def week_ticks(weeks: Sequence[str], complete: Sequence[bool]) -> list[str]:
    """`2026-W45` → `W45`, with the year under the first week and wherever it changes, and
    `so far` under a week still in progress (Plotly breaks lines at `<br>`)."""
    out, year = [], ""
    for week, done in zip(weeks, complete, strict=True):
        head, _dash, number = week.partition("-")
        text = f"W{number.removeprefix('W')}"
        if head != year:
            text, year = f"{text}<br>{head}", head
        out.append(text if done else f"{text}<br>{_('so far')}")
    return out


def week_axis(x: Sequence[str], ticks: Sequence[str], **extra: Any) -> dict[str, Any]:
    """A category x-axis over `x` labelled with `ticks`, never rotated."""
    return {
        "type": "category",
        "tickmode": "array",
        "tickvals": list(x),
        "ticktext": list(ticks),
        "tickangle": 0,
        **extra,
    }


def no_data_notes(
    x: Sequence[str], empty: Sequence[bool], *, why: str, yref: str = "paper", y: float = 0.0
) -> list[dict[str, Any]]:
    """A small "no data" at the foot of each empty week (hover: `why`), where the chart
    would otherwise show an empty slot that reads as 0."""
    return [
        {
            "xref": "x",
            "x": week,
            "yref": yref,
            "y": y,
            "yanchor": "bottom",
            "text": _("no<br>data"),
            "showarrow": False,
            "font": {"size": 10, "color": SERIES["target"]},
            "hovertext": f"{week}: {why}",
        }
        for week, nothing in zip(x, empty, strict=True)
        if nothing
    ]
