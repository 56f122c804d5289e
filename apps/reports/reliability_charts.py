"""The reliability page's figures as plain Plotly JSON: MTBF and MTTR by week, the Pareto of
causes (dicts rather than plotly.graph_objects, like every chart here)."""

from __future__ import annotations

import math
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from apps.common.charts import CONFIG, SERIES, base_layout, reference_line, target_line
from apps.common.choices import Tone
from apps.incidents.choices import category_label
from apps.reports.chart_weeks import no_data_notes, week_axis, week_ticks
from apps.reports.choices import GpuHours, RecoveryPart
from apps.reports.targets import RECOVERY_REFERENCE_LABEL, RECOVERY_REFERENCE_MINUTES, target_text


def _unexpected(n: int) -> str:
    """'3 unexpected interruptions', in the reader's language."""
    return ngettext("%(n)s unexpected interruption", "%(n)s unexpected interruptions", n) % {
        "n": f"{n:,}"
    }


# Tick values of the MTBF axis (hours, log scale) and how they read.
MTBF_TICKS = (
    (1, "1 h"),
    (2, "2 h"),
    (6, "6 h"),
    (12, "12 h"),
    (24, "1 d"),
    (48, "2 d"),
    (96, "4 d"),
    (168, "7 d"),
    (360, "15 d"),
    (720, "30 d"),
    (1440, "60 d"),
    (2160, "90 d"),
    (4320, "180 d"),
    (8760, "1 y"),
)


def _mtbf_axis(values: list[float], target: float) -> tuple[dict[str, Any], float]:
    """The log MTBF axis over the measured weeks and the target, and the height (hours) of
    the band above its highest tick where the "no failure" markers sit."""
    top = max([*values, target])
    low = min([*values, target])
    ticks = [(v, t) for v, t in MTBF_TICKS if low / 1.5 <= v <= top * 1.05]
    axis = {
        "type": "log",
        "title": {"text": _("MTBF (log)")},
        "domain": [0.40, 1],
        "range": [math.log10(low / 1.5), math.log10(top * 3)],
        "tickmode": "array",
        "tickvals": [v for v, _ in ticks],
        "ticktext": [t for _, t in ticks],
    }
    return axis, top * 2


def reliability_trend_figure(weeks: list[dict[str, Any]], mtbf_target: float) -> dict[str, Any]:
    """Cluster MTBF (bars, log scale) against its target (a floor) above MTTR (a line, in
    minutes) per ISO week, each in its own panel so no axis shares a side with another.

    A week without a failure has no MTBF: it gets a marker at the top ("no failure", the
    MTBF is longer than the week) instead of a bar, and no MTTR; a week in which no node was
    in service says "no data". Neither is ever drawn as 0."""
    x = [w["week"] + ("" if w.get("complete", True) else _(" (so far)")) for w in weeks]
    empty = [not w.get("node_days", 1) for w in weeks]
    calm = [w["interruptions"] == 0 and not e for w, e in zip(weeks, empty, strict=True)]
    mtbf = [w["mtbf_hours"] for w in weeks]
    yaxis, band = _mtbf_axis([v for v in mtbf if v], mtbf_target)
    traces = [
        {
            "type": "bar",
            "name": _("cluster MTBF"),
            "x": x,
            "y": mtbf,
            "customdata": [w["interruptions"] for w in weeks],
            "hovertext": [_unexpected(w["interruptions"]) for w in weeks],
            "marker": {"color": SERIES["mfu"]},
            "hovertemplate": _("%{y:.1f} h over %{hovertext}")
            + "<extra>"
            + _("cluster MTBF")
            + "</extra>",
        },
        {
            "type": "scatter",
            "mode": "markers",
            "name": _("no failure (MTBF longer than the week)"),
            "x": [week for week, c in zip(x, calm, strict=True) if c],
            "y": [band for c in calm if c],
            "hovertext": [
                _("0 unexpected interruptions in %(hours)s h: MTBF longer than the week")
                % {"hours": f"{w['hours']:.0f}"}
                for w, c in zip(weeks, calm, strict=True)
                if c
            ],
            "hovertemplate": "%{hovertext}<extra>" + _("no failure") + "</extra>",
            "marker": {"symbol": "triangle-up", "size": 11, "color": Tone.GOOD.colour},
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "MTTR",
            "x": x,
            "y": [w["mttr_minutes"] for w in weeks],
            "yaxis": "y2",
            "line": {"color": SERIES["mttr"]},
            "hovertemplate": "%{y:.1f} min<extra>MTTR</extra>",
        },
    ]
    layout = base_layout(
        height=360,
        showlegend=True,
        hovermode="x",
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        margin={"l": 64, "r": 16, "t": 40, "b": 56},
        xaxis=week_axis(
            x,
            week_ticks([w["week"] for w in weeks], [w.get("complete", True) for w in weeks]),
            anchor="y2",
        ),
        yaxis=yaxis,
        yaxis2={
            "title": {"text": _("MTTR (min)")},
            "domain": [0, 0.28],
            "anchor": "x",
            "rangemode": "tozero",
            "nticks": 4,
        },
        shapes=[
            target_line(
                mtbf_target,
                label=_("cluster MTBF target %(floor)s")
                % {"floor": target_text("mtbf_hours", mtbf_target)},
            )
        ],
        annotations=no_data_notes(x, empty, why=_("no node was in service"), yref="y domain"),
    )
    return {"data": traces, "layout": layout, "config": CONFIG}


# What each part of a recovery runs between, as its hover says.
PART_SPANS = {
    RecoveryPart.DETECT: gettext_lazy("failure → detected"),
    RecoveryPart.LOCALISE: gettext_lazy("detected → localised"),
    RecoveryPart.MITIGATE: gettext_lazy("localised → mitigated"),
    RecoveryPart.RESTART: gettext_lazy("mitigated → training resumed"),
}


def recovery_parts_figure(weeks: list[dict[str, Any]]) -> dict[str, Any]:
    """Recovery time per ISO week and its parts
    (docs/formulas.md, Recovery time and its parts): the mean minutes of detect, localise,
    mitigate and restart stacked, so a bar's top is the week's mean recovery, against the
    reference line "recovery in minutes".

    A week in which no unexpected interruption recovered has no bar and says "no data": a
    gap, never a zero."""
    x = [w["week"] + ("" if w["complete"] else _(" (so far)")) for w in weeks]
    empty = [not w["interruptions"] for w in weeks]
    counts = [
        ngettext("%(n)s interruption", "%(n)s interruptions", w["interruptions"])
        % {"n": f"{w['interruptions']:,}"}
        for w in weeks
    ]
    traces = [
        {
            "type": "bar",
            "name": str(part.label),
            "x": x,
            "y": [w["parts_minutes"][part.value] for w in weeks],
            "hovertext": counts,
            "marker": {"color": part.colour},
            "hovertemplate": _("%{y:.1f} min, mean over %{hovertext}")
            + f"<extra>{part.label}: {PART_SPANS[part]}</extra>",
        }
        for part in RecoveryPart
    ]
    tops = [w["recovery_minutes"] for w in weeks if w["recovery_minutes"] is not None]
    top = max([*tops, RECOVERY_REFERENCE_MINUTES])
    layout = base_layout(
        height=340,
        barmode="stack",
        showlegend=True,
        hovermode="x",
        # detect first, as the parts come (a stacked chart's legend is reversed by default)
        legend={
            "orientation": "h",
            "x": 0,
            "y": 1.02,
            "yanchor": "bottom",
            "traceorder": "normal",
        },
        margin={"l": 64, "r": 16, "t": 56, "b": 56},
        xaxis=week_axis(x, week_ticks([w["week"] for w in weeks], [w["complete"] for w in weeks])),
        yaxis={
            "title": {"text": _("mean minutes")},
            "range": [0, top * 1.15],
            "rangemode": "tozero",
            "automargin": True,
        },
        shapes=[reference_line(RECOVERY_REFERENCE_MINUTES, str(RECOVERY_REFERENCE_LABEL))],
        annotations=no_data_notes(
            x, empty, why=_("no unexpected interruption recovered"), yref="y domain"
        ),
    )
    return {"data": traces, "layout": layout, "config": CONFIG}


# The Pareto's two panels, one above the other (each full width, so neither's axis labels
# reach into the other's on a phone or a wall): by count on top, by lost GPU-hours below,
# the gap between them room for the top panel's slanted cause names.
PARETO_COUNT_DOMAIN = [0.60, 1.0]
PARETO_COST_DOMAIN = [0.0, 0.38]


def pareto_figure(categories: list[dict[str, Any]]) -> dict[str, Any]:
    """Causes by count with the cumulative share (top), and by lost GPU-hours (below): two
    panels that never share a side, each axis titled, no legend to crowd their labels."""
    by_count = sorted(categories, key=lambda c: -c["count"])
    total = sum(c["count"] for c in by_count) or 1
    running, cumulative = 0, []
    for c in by_count:
        running += c["count"]
        cumulative.append(running / total)
    by_cost = sorted(categories, key=lambda c: -c["lost_gpu_hours"])
    traces = [
        {
            "type": "bar",
            "name": _("interruptions"),
            "x": [category_label(c["category"]) for c in by_count],
            "y": [c["count"] for c in by_count],
            "marker": {"color": SERIES["mfu"]},
            "hovertemplate": "%{x}: %{y:,.0f}<extra>" + _("interruptions") + "</extra>",
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": _("cumulative share"),
            "x": [category_label(c["category"]) for c in by_count],
            "y": cumulative,
            "yaxis": "y2",
            "line": {"color": SERIES["target"]},
            "hovertemplate": "%{y:.0%}<extra>" + _("cumulative share") + "</extra>",
        },
        {
            "type": "bar",
            "name": _("lost GPU-hours"),
            "x": [category_label(c["category"]) for c in by_cost],
            "y": [c["lost_gpu_hours"] for c in by_cost],
            "xaxis": "x2",
            "yaxis": "y3",
            "marker": {"color": GpuHours.DOWNTIME.colour},
            "hovertemplate": "%{x}: %{y:,.0f} GPU·h<extra>" + _("lost GPU-hours") + "</extra>",
        },
    ]
    names = {"tickangle": -35, "automargin": True}
    layout = base_layout(
        height=640,
        showlegend=False,
        hovermode="closest",
        xaxis={**names, "anchor": "y"},
        xaxis2={**names, "anchor": "y3"},
        yaxis={
            "title": {"text": _("interruptions")},
            "domain": PARETO_COUNT_DOMAIN,
            "rangemode": "tozero",
            "automargin": True,
        },
        yaxis2={
            "title": {"text": _("cumulative share")},
            "overlaying": "y",
            "side": "right",
            "anchor": "x",
            "tickformat": ".0%",
            "range": [0, 1.05],
            "automargin": True,
        },
        yaxis3={
            "title": {"text": _("lost GPU-hours")},
            "domain": PARETO_COST_DOMAIN,
            "anchor": "x2",
            "rangemode": "tozero",
            "automargin": True,
        },
        margin={"l": 60, "r": 60, "t": 30, "b": 20},
        annotations=[
            _panel_title(_("by count, with the cumulative share"), PARETO_COUNT_DOMAIN[1]),
            _panel_title(_("by lost GPU-hours"), PARETO_COST_DOMAIN[1]),
        ],
    )
    return {"data": traces, "layout": layout, "config": CONFIG}


def _panel_title(text: str, top: float) -> dict[str, Any]:
    """A panel's title, over its top left corner."""
    return {
        "text": f"<b>{text}</b>",
        "xref": "paper",
        "yref": "paper",
        "x": 0,
        "y": top,
        "xanchor": "left",
        "yanchor": "bottom",
        "showarrow": False,
    }
