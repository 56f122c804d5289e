"""The node page's per-GPU charts as Plotly JSON: one small chart per metric in a grid,
one trace per GPU in the same colour on every chart (so GPU 3 is one colour across
temperature, power, clocks …), or the node's mean with a min–max band from rollups. A
source that did not answer is a message where the charts would be, not empty axes."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils.translation import gettext as _

from apps.common.charts import (
    CONFIG,
    TOOLBAR_PX,
    base_layout,
    iso,
    line_style,
    plain,
    translucent,
)
from apps.common.choices import Hue, Series
from apps.telemetry.gpu_history import GPUHistory, Trace
from apps.telemetry.promql import MAX_POINTS

# GPU index → colour (index modulo the length): from the shared palette, never by hand.
GPU_HUES = (
    Hue.BLUE,
    Hue.VIVID_ORANGE,
    Hue.GREEN,
    Hue.RED,
    Hue.PURPLE,
    Hue.BROWN,
    Hue.CYAN,
    Hue.AMBER,
    Hue.SLATE,
    Hue.DARK_GREY,
)
# A panel's colour when it shows the node's mean (rollups): the series colours where the
# node page's metrics have one.
PANEL_COLOURS = {
    "temp_c": Series.TEMP_C.colour,
    "power_w": Series.POWER_W.colour,
    "gpu_util": Series.GPU_UTIL.colour,
    "sm_clock_mhz": Hue.PURPLE,
    "mem_used_mib": Hue.BROWN,
    "tensor_active": Hue.CYAN,
    "not_active": Hue.RED,  # a node's ports not ACTIVE (apps/telemetry/port_history.py)
}
COLUMNS = 2
ROW_HEIGHT = 210


def gpu_colour(index: int) -> str:
    """The colour of GPU `index` on every per-GPU chart."""
    return GPU_HUES[index % len(GPU_HUES)]


def message_figure(text: str, *, height: int = 160) -> dict[str, Any]:
    """A figure that is only a message (the source did not answer, no data): no axes."""
    hidden = {"visible": False}
    layout = base_layout(
        height=height,
        xaxis=hidden,
        yaxis=hidden,
        annotations=[
            {
                "text": plain(text),
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "showarrow": False,
                "font": {"size": 14, "color": Series.MTTR.colour},
            }
        ],
    )
    return {"data": [], "layout": layout, "config": CONFIG}


def compact(value: float) -> str:
    """A reading as a short number: `0`, `0.42`, `1.2k`, `3.4M`."""
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:.3g}M"
    if size >= 1e3:
        return f"{value / 1e3:.3g}k"
    return f"{value:.3g}"


# The charts say how much of their range has readings when it is less than this share of it.
SPAN_SHORT = 0.8


def span_note(history: GPUHistory) -> dict[str, Any] | None:
    """A line over the charts when their readings cover much less than the range the page
    names (a node that reported for 2 h of the 24 h shown): the true span, in words."""
    times = [t for _, traces in history.panels for trace in traces for t in trace.x]
    window = history.window
    length = (window.end - window.start).total_seconds()
    if not times or length <= 0:
        return None
    first, last = min(times), max(times)
    covered = max(last - first, 0.0)
    if covered >= SPAN_SHORT * length:
        return None
    since = dt.datetime.fromtimestamp(first, tz=dt.UTC)
    text = _("Readings only since %(since)s UTC: %(span)s of the %(range)s shown") % {
        "since": f"{since:%Y-%m-%d %H:%M}",
        "span": _span(covered),
        "range": window.label,
    }
    return {
        "text": plain(text),
        "x": 0,
        "xref": "paper",
        "xanchor": "left",
        "y": 1,
        "yref": "container",
        "yanchor": "top",
        "pad": {"t": 8},
        "font": {"size": 12, "color": Series.MTTR.colour},
    }


def _span(seconds: float) -> str:
    """How long readings cover: `5 min`, `2 h`, `3 d 4 h`."""
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{max(minutes, 1)} min"
    hours = round(seconds / 3600)
    if hours < 48:
        return f"{hours} h"
    return f"{hours // 24} d {hours % 24} h" if hours % 24 else f"{hours // 24} d"


def _capped(trace: Trace) -> tuple[list[str], list[float | None]]:
    """x as ISO times and y, at most MAX_POINTS (evenly thinned if a source sent more)."""
    n = len(trace.x)
    stride = -(-n // MAX_POINTS) if n > MAX_POINTS else 1
    return [iso(t) for t in trace.x[::stride]], list(trace.y[::stride])


def gpu_history_figure(history: GPUHistory) -> dict[str, Any]:
    """The charts of `history` as one Plotly figure: a grid of small charts sharing the time
    axis, each with its title; a message figure when the source did not answer or there is
    nothing in the range."""
    if history.error:
        return message_figure(
            _("No charts: %(error)s. They come back when it answers again.")
            % {"error": history.error}
        )
    if not any(trace.x for _, traces in history.panels for trace in traces):
        where = "Prometheus" if history.source == "prometheus" else _("KUAE's rollups")
        return message_figure(
            _("No %(what)s for this node in %(where)s over %(range)s.")
            % {"what": history.what, "where": where, "range": history.window.label}
        )
    data: list[dict[str, Any]] = []
    layout_axes: dict[str, Any] = {}
    annotations: list[dict[str, Any]] = []
    rows = -(-len(history.panels) // COLUMNS)
    gap_x, gap_y = 0.08, 0.07
    cell_w = (1 - gap_x * (COLUMNS - 1)) / COLUMNS
    cell_h = (1 - gap_y * (rows - 1)) / rows
    seen_gpus: set[int] = set()
    for i, (panel, traces) in enumerate(history.panels):
        n = i + 1
        xa, ya = ("x", "y") if n == 1 else (f"x{n}", f"y{n}")
        row, col = divmod(i, COLUMNS)
        left = col * (cell_w + gap_x)
        top = 1 - row * (cell_h + gap_y)
        layout_axes["xaxis" if n == 1 else f"xaxis{n}"] = {
            "type": "date",
            "domain": [left, left + cell_w],
            "anchor": ya,
            "range": [iso(history.window.start), iso(history.window.end)],
            # The charts share the time axis: its dates under the bottom row only.
            "showticklabels": row == rows - 1,
            **({} if n == 1 else {"matches": "x"}),
        }
        yaxis: dict[str, Any] = {
            "domain": [top - cell_h, top],
            "anchor": xa,
            "rangemode": "tozero"
            if panel.tozero or panel.key in ("gpu_util", "tensor_active")
            else "normal",
        }
        readings = [
            (t, v)
            for trace in traces
            for t, v in zip(trace.x, trace.y, strict=False)
            if v is not None
        ]
        values = {v for _, v in readings}
        if panel.ticks:
            yaxis["tickvals"] = [value for value, _ in panel.ticks]
            yaxis["ticktext"] = [plain(word) for _, word in panel.ticks]
            yaxis["range"] = [panel.ticks[0][0] - 0.3, panel.ticks[-1][0] + 0.3]
        elif panel.bounds is not None:
            yaxis["range"] = list(panel.bounds)
        elif not values:
            yaxis["showticklabels"] = False  # no readings: no made-up scale
        elif len(values) == 1:
            # one value (one reading, or the same one throughout): a single tick at it, in
            # the middle of the cell, rather than Plotly's 0–1 around one dot
            only = next(iter(values))
            half = abs(only) / 2 or 1.0
            yaxis["range"] = [only - half, only + half]
            yaxis["tickvals"] = [only]
            yaxis["ticktext"] = [compact(only)]
        layout_axes["yaxis" if n == 1 else f"yaxis{n}"] = yaxis
        annotations.append(
            {
                "text": f"<b>{plain(str(panel.title))}</b> ({plain(str(panel.unit))})",
                "xref": "paper",
                "yref": "paper",
                "x": left,
                "y": top,
                "xanchor": "left",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 12},
            }
        )
        blind = history.blind.get(panel.key)
        # Its exporter cannot publish it (nothing was asked), or nothing came in the range
        # (as a Moore Threads GPU's SM clock): said in the chart, never bare axes.
        gap = (
            _("not reported by %(exporter)s") % {"exporter": blind}
            if blind
            else _("no readings over %(range)s") % {"range": history.window.label}
            if not readings
            else _("one reading: %(value)s %(unit)s at %(time)s UTC")
            % {
                "value": compact(readings[0][1]),
                "unit": panel.unit,
                "time": f"{dt.datetime.fromtimestamp(readings[0][0], tz=dt.UTC):%H:%M}",
            }
            if len(readings) == 1
            else ""
        )
        if gap:
            annotations.append(
                {
                    "text": plain(gap),
                    "xref": "paper",
                    "yref": "paper",
                    "x": left + cell_w / 2,
                    # one reading: over its dot (in the middle of the cell), not on it
                    "y": top - cell_h / (4 if readings else 2),
                    # centred on the cell (Plotly's "auto" anchors the right column's text
                    # by its end)
                    "xanchor": "center",
                    "yanchor": "middle",
                    "showarrow": False,
                    "font": {"size": 12, "color": Series.MTTR.colour},
                }
            )
        hover = panel.hover or ("%{y:.2f}" if panel.key == "tensor_active" else "%{y:.0f}")
        for trace in traces:
            x, y = _capped(trace)
            if trace.gpu is not None:
                colour = gpu_colour(trace.gpu)
                data.append(
                    {
                        "type": "scatter",
                        **line_style(y, colour),
                        "x": x,
                        "y": y,
                        "xaxis": xa,
                        "yaxis": ya,
                        "name": plain(trace.name),
                        "legendgroup": f"gpu{trace.gpu}",
                        "showlegend": trace.gpu not in seen_gpus,
                        "line": {"color": colour, "width": 1.2},
                        "hovertemplate": (
                            f"{hover} {plain(str(panel.unit))}<extra>{plain(trace.name)}</extra>"
                        ),
                    }
                )
                seen_gpus.add(trace.gpu)
                continue
            colour = PANEL_COLOURS.get(panel.key, Hue.BLUE)
            for edge, fill in ((trace.high, None), (trace.low, "tonexty")):
                if edge is None:
                    continue
                band: dict[str, Any] = {
                    "type": "scatter",
                    "mode": "lines",
                    "x": x,
                    "y": _capped(Trace(trace.name, trace.x, edge))[1],
                    "xaxis": xa,
                    "yaxis": ya,
                    "line": {"width": 0},
                    "showlegend": False,
                    "hoverinfo": "skip",
                }
                if fill:
                    band["fill"] = fill
                    band["fillcolor"] = translucent(colour, 0.2)
                data.append(band)
            data.append(
                {
                    "type": "scatter",
                    **line_style(y, colour),
                    "x": x,
                    "y": y,
                    "xaxis": xa,
                    "yaxis": ya,
                    "name": f"{plain(str(panel.title))} ({plain(trace.name)})",
                    "showlegend": False,
                    "line": {"color": colour, "width": 1.5},
                    "hovertemplate": (
                        f"{hover} {plain(str(panel.unit))}<extra>{plain(trace.name)}</extra>"
                    ),
                }
            )
    span = span_note(history)
    layout = base_layout(
        height=ROW_HEIGHT * rows + 60,
        **({"title": span} if span else {}),
        showlegend=history.per_gpu,
        legend={"orientation": "h", "y": -0.06, "yanchor": "top"},
        hovermode="closest",
        annotations=annotations,
        margin={"l": 50, "r": 10, "t": TOOLBAR_PX + (24 if span else 0), "b": 40},
        **layout_axes,
    )
    return {"data": data, "layout": layout, "config": CONFIG}
