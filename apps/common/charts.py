"""Plotly conventions shared by every chart (docs/pages.md, Charts): no logo, responsive, range
buttons, series colours from the palette, target and reference lines."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from apps.common.choices import Series

RANGE_BUTTONS: list[dict[str, Any]] = [
    {"count": 1, "label": "1 h", "step": "hour", "stepmode": "backward"},
    {"count": 6, "label": "6 h", "step": "hour", "stepmode": "backward"},
    {"count": 24, "label": "24 h", "step": "hour", "stepmode": "backward"},
    {"count": 7, "label": "7 d", "step": "day", "stepmode": "backward"},
    {"count": 30, "label": "30 d", "step": "day", "stepmode": "backward"},
    {"step": "all", "label": "all"},
]

# Series colours, the same on every page (`Series.palette()`).
SERIES = Series.colour_map()

# No logo, and only the tools an operator uses (zoom, pan, reset, a PNG): a short toolbar,
# in the band over the plot that `TOOLBAR_PX` keeps free, never over the bars or the lines.
CONFIG = {
    "displaylogo": False,
    "responsive": True,
    "modeBarButtonsToRemove": [
        "select2d",
        "lasso2d",
        "zoomIn2d",
        "zoomOut2d",
        "autoScale2d",
        "toggleSpikelines",
        "hoverClosestCartesian",
        "hoverCompareCartesian",
    ],
}
# The height (px) of the band at the top of a chart where Plotly's toolbar sits: a chart's
# top margin is at least this, so the toolbar floats over no bar, line or label.
TOOLBAR_PX = 36
# A chart with range buttons: the toolbar's band, then the buttons' row under it (on the
# left, over the plot), so neither covers the other at any width.
RANGE_ROW_PX = 30


def range_selector(buttons: Sequence[dict[str, Any]] = RANGE_BUTTONS) -> dict[str, Any]:
    """An x axis's range buttons, in the row just over the plot, under the toolbar's band
    (the chart's top margin is `range_top()`)."""
    return {"buttons": list(buttons), "x": 0, "xanchor": "left", "y": 1, "yanchor": "bottom"}


def range_top() -> int:
    """The top margin of a chart with range buttons: the toolbar's band and the buttons' row."""
    return TOOLBAR_PX + RANGE_ROW_PX


def plain(text: str) -> str:
    """A name shown as text in a chart (legend, axis label, hover): Plotly renders a subset of
    HTML in those, so a job named `<a href=…>` would become a link. Entities show as text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def iso(ts: float | dt.datetime) -> str:
    """Epoch seconds or an aware datetime → `2026-11-23T14:05:00Z`, as Plotly's x values."""
    if not isinstance(ts, dt.datetime):
        ts = dt.datetime.fromtimestamp(ts, tz=dt.UTC)
    return ts.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def line_style(y: Sequence[float | None], colour: str) -> dict[str, Any]:
    """A line trace's Plotly mode, with a dot of the line's colour on each point that has no
    neighbour to be joined to (a series of one point, or one between gaps), which a line
    alone leaves undrawn: a port's first 5-minute rollup, a job's first sample."""
    last = len(y) - 1
    sizes = [
        6
        if value is not None and (i == 0 or y[i - 1] is None) and (i == last or y[i + 1] is None)
        else 0
        for i, value in enumerate(y)
    ]
    if not any(sizes):
        return {"mode": "lines"}
    return {"mode": "lines+markers", "marker": {"color": colour, "size": sizes}}


def translucent(colour: str, alpha: float) -> str:
    """`Hue.GREEN`, 0.12 → `rgba(46,158,79,0.12)`: a palette colour as a fill behind a line."""
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha:g})"


def base_layout(**extra: Any) -> dict[str, Any]:
    """Layout defaults: transparent background (themes come from CSS), tight margins."""
    layout: dict[str, Any] = {
        "margin": {"l": 60, "r": 20, "t": TOOLBAR_PX, "b": 40},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "hovermode": "x unified",
        "legend": {"orientation": "h", "y": 1.08},
        "uirevision": "keep",
    }
    layout.update(extra)
    return layout


def target_line(y: float, axis: str = "y", label: str = "") -> dict[str, Any]:
    """A dotted grey line across the plot at a target (a floor), labelled at its end."""
    shape: dict[str, Any] = {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "yref": axis,
        "y0": y,
        "y1": y,
        "line": {"dash": "dot", "color": SERIES["target"], "width": 1},
    }
    if label:
        shape["label"] = {
            "text": label,
            "textposition": "end",
            "yanchor": "top",  # below the line: a target at the top of the range stays in view
            "font": {"size": 10, "color": SERIES["target"]},
        }
    return shape


def reference_line(y: float, label: str, axis: str = "y") -> dict[str, Any]:
    """A dash-dotted line at a reference value that is not a target (the best public MFU)."""
    shape = target_line(y, axis, label)
    shape["line"] = {"dash": "dashdot", "color": SERIES["reference"], "width": 1}
    shape["label"]["font"]["color"] = SERIES["reference"]
    shape["label"]["textposition"] = "start"  # the target's label sits at the other end
    return shape
