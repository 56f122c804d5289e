"""Plotly figures of the weekly report and the trends page (plain dicts, like every chart);
colours from the choices: causes from `GpuHours`, availability from `NodeState`."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from apps.common.charts import (
    CONFIG,
    SERIES,
    TOOLBAR_PX,
    base_layout,
    iso,
    plain,
    range_selector,
    range_top,
    reference_line,
    target_line,
    translucent,
)
from apps.fleet.choices import NodeState
from apps.reports.chart_weeks import no_data_notes, week_axis, week_ticks
from apps.reports.choices import LOSS_CAUSES, GpuHours
from apps.reports.targets import MFU_REFERENCE, MFU_REFERENCE_LABEL, target_words


def waterfall_figure(report: dict[str, Any]) -> dict[str, Any]:
    """Scheduled GPU-hours, minus each cause of loss, down to the productive ones."""
    lost = report["lost_gpu_hours"]
    causes = [c.value for c in LOSS_CAUSES]
    names = [_("scheduled"), *(str(c.label) for c in LOSS_CAUSES), str(GpuHours.PRODUCTIVE.label)]
    trace = {
        "type": "waterfall",
        "orientation": "v",
        "x": names,
        "measure": ["absolute", *(["relative"] * len(causes)), "total"],
        "y": [report["scheduled_gpu_hours"], *(-lost[c] for c in causes), 0],
        "text": [
            f"{report['scheduled_gpu_hours']:,.0f}",
            *(f"−{lost[c]:,.1f}" for c in causes),
            f"{report['productive_gpu_hours']:,.0f}",
        ],
        "textposition": "outside",
        "decreasing": {"marker": {"color": GpuHours.DOWNTIME.colour}},
        "increasing": {"marker": {"color": GpuHours.PRODUCTIVE.colour}},
        "totals": {"marker": {"color": GpuHours.PRODUCTIVE.colour}},
        "connector": {"line": {"color": SERIES["target"], "width": 1}},
        "hovertemplate": "%{x}: %{y:,.1f} GPU·h<extra></extra>",
    }
    low = report["productive_gpu_hours"] - 3 * max(sum(lost.values()), 1.0)
    layout = base_layout(
        height=320,
        showlegend=False,
        hovermode="closest",
        xaxis={
            "tickmode": "array",
            "tickvals": names,
            "ticktext": [wrap(n) for n in names],  # two short lines rather than slanted
            "tickangle": 0,
        },
        yaxis={
            "title": {"text": _("GPU-hours")},
            "range": [max(0.0, low), report["scheduled_gpu_hours"] * 1.01 + 1],
        },
    )
    return {"data": [trace], "layout": layout, "config": CONFIG}


def wrap(label: str) -> str:
    """`rework since checkpoint` → `rework since<br>checkpoint`: a tick label on two lines,
    broken at the space nearest its middle."""
    if " " not in label:
        return label
    middle = len(label) / 2
    cut = min((i for i, ch in enumerate(label) if ch == " "), key=lambda i: abs(i - middle))
    return f"{label[:cut]}<br>{label[cut + 1 :]}"


def lost_by_category_figure(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Lost GPU-hours per incident category, costliest first (horizontal bars)."""
    rows = list(reversed(rows[:15]))
    trace = {
        "type": "bar",
        "orientation": "h",
        "y": [r["label"] for r in rows],
        "x": [r["lost_gpu_hours"] for r in rows],
        "text": [
            ngettext("%(n)s incident", "%(n)s incidents", r["count"]) % {"n": r["count"]}
            for r in rows
        ],
        "marker": {"color": GpuHours.DOWNTIME.colour},
        "hovertemplate": "%{y}: %{x:,.1f} GPU·h (%{text})<extra></extra>",
    }
    layout = base_layout(
        height=max(160, 40 + 26 * len(rows)),
        showlegend=False,
        hovermode="closest",
        margin={"l": 170, "r": 20, "t": 10, "b": 40},
        xaxis={"title": {"text": _("lost GPU-hours")}},
    )
    return {"data": [trace], "layout": layout, "config": CONFIG}


def effective_by_week_figure(weeks: list[dict[str, Any]], target: float) -> dict[str, Any]:
    """Effective rate per ISO week (line) over the GPU-hours lost by cause (stacked bars);
    the week in progress is labelled "so far". A week in which no job ran has neither: it
    is a gap marked "no data", while a week of jobs that lost nothing has real zeros."""
    x = [w["label"] for w in weeks]
    empty = [not w["scheduled_gpu_hours"] for w in weeks]
    traces: list[dict[str, Any]] = [
        {
            "type": "bar",
            "name": str(c.label),
            "x": x,
            "y": [None if e else w["lost_gpu_hours"][c] for w, e in zip(weeks, empty, strict=True)],
            "yaxis": "y2",
            "marker": {"color": c.colour},
            "hovertemplate": "%{y:,.0f} GPU·h<extra>" + str(c.label) + "</extra>",
        }
        for c in LOSS_CAUSES
    ]
    traces.append(
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": _("effective rate"),
            "x": x,
            "y": [w["effective_rate"] for w in weeks],
            "line": {"color": SERIES["mfu"], "width": 2},
            "hovertemplate": "%{y:.2%}<extra>" + _("effective rate") + "</extra>",
        }
    )
    ticks = week_ticks([w["week"] for w in weeks], [w["complete"] for w in weeks])
    layout = base_layout(
        height=380,
        barmode="stack",
        hovermode="x",
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        margin={"l": 64, "r": 16, "t": 40, "b": 56},
        xaxis=week_axis(x, ticks, anchor="y2"),
        yaxis={"title": {"text": _("effective rate")}, "tickformat": ".1%", "domain": [0.5, 1]},
        yaxis2={"title": {"text": _("lost GPU·h")}, "domain": [0, 0.42], "anchor": "x"},
        shapes=[target_line(target, label=target_words("effective_rate", target))],
        annotations=no_data_notes(x, empty, why=_("no job ran"), yref="y2 domain"),
    )
    return {"data": traces, "layout": layout, "config": CONFIG}


def mfu_figure(series: dict[str, Any], target: float) -> dict[str, Any]:
    """Cluster MFU (GPU-weighted) and the largest jobs' MFU per hour, with the cluster's
    MFU target (a floor) and the best public figure (a reference, not a limit)."""
    x = [iso(h) for h in series["hours"]]
    traces = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": _("cluster (GPU-weighted)"),
            "x": x,
            "y": series["cluster"],
            "line": {"color": SERIES["mfu"], "width": 2.2},
            "hovertemplate": "%{y:.1%}<extra>" + _("cluster") + "</extra>",
        }
    ]
    for job in series["jobs"]:
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": plain(
                    _("%(name)s (%(gpus)s GPUs)")
                    % {"name": job["name"], "gpus": f"{job['gpu_count']:,}"}
                ),
                "x": x,
                "y": job["mfu"],
                "line": {"width": 1},
                "opacity": 0.6,
                "visible": "legendonly" if len(traces) > 4 else True,
                # The trace's own (escaped) name, never the job's name in the template:
                # Plotly reads HTML and `%{…}` variables in a template, not in what fills it.
                "hovertemplate": "%{y:.1%}<extra>%{fullData.name}</extra>",
            }
        )
    layout = base_layout(
        height=380,
        legend={"orientation": "h", "y": -0.15},
        margin={"l": 60, "r": 20, "t": range_top(), "b": 40},
        xaxis={"type": "date", "rangeselector": range_selector()},
        yaxis={"title": {"text": "MFU"}, "tickformat": ".0%", "rangemode": "tozero"},
        shapes=[
            target_line(target, label=target_words("mean_mfu", target)),
            reference_line(MFU_REFERENCE, str(MFU_REFERENCE_LABEL)),
        ],
    )
    return {"data": traces, "layout": layout, "config": CONFIG}


def availability_figure(series: dict[str, Any], target: float) -> dict[str, Any]:
    """GPU availability per hour (docs/formulas.md, GPU availability, over each hour)."""
    trace = {
        "type": "scatter",
        "mode": "lines",
        "name": _("GPU availability"),
        "x": [iso(h) for h in series["hours"]],
        "y": series["availability"],
        "line": {"color": NodeState.HEALTHY.colour, "width": 1.6, "shape": "hv"},
        "fill": "tozeroy",
        "fillcolor": translucent(NodeState.HEALTHY.colour, 0.12),
        "hovertemplate": "%{y:.2%}<extra>" + _("available") + "</extra>",
    }
    floor = min((v for v in series["availability"] if v is not None), default=1.0)
    layout = base_layout(
        height=300,
        showlegend=False,
        margin={"l": 60, "r": 20, "t": range_top(), "b": 40},
        xaxis={"type": "date", "rangeselector": range_selector()},
        yaxis={"tickformat": ".1%", "range": [min(floor, target) - 0.005, 1.001]},
        shapes=[target_line(target, label=target_words("availability", target))],
    )
    return {"data": [trace], "layout": layout, "config": CONFIG}


def availability_heatmap_figure(series: dict[str, Any]) -> dict[str, Any]:
    """Node × day availability for the nodes that lost most time (worst at the top)."""
    rows = list(reversed(series["heatmap"]))
    trace = {
        "type": "heatmap",
        "x": [d.strftime("%Y-%m-%d") for d in series["days"]],
        "y": [r["hostname"] for r in rows],
        "z": [r["by_day"] for r in rows],
        "zmin": 0,
        "zmax": 1,
        # Available share as the node states read it: down → drained → suspect → healthy.
        "colorscale": [
            [0, NodeState.DOWN.colour],
            [0.5, NodeState.DRAINED.colour],
            [0.9, NodeState.SUSPECT.colour],
            [1, NodeState.HEALTHY.colour],
        ],
        "colorbar": {"tickformat": ".0%", "title": {"text": _("available")}},
        "xgap": 1,
        "ygap": 1,
        "hovertemplate": "%{y} · %{x}: %{z:.1%}<extra></extra>",
        "hoverongaps": False,  # a day the node was not in service: blank, no hover
    }
    layout = base_layout(
        height=max(200, 60 + 16 * len(rows)),
        hovermode="closest",
        margin={"l": 90, "r": 20, "t": 10, "b": 40},
        yaxis={"type": "category", "tickfont": {"family": "monospace", "size": 11}},
    )
    return {"data": [trace], "layout": layout, "config": CONFIG}


def checkpoint_cost_figure(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per running job: GPU-hours spent blocked on checkpoints in the last 7 days, and what
    the advised interval would save a week."""
    rows = rows[:20]
    names = [plain(r["name"]) for r in rows]
    traces = [
        {
            "type": "bar",
            "name": _("checkpoint GPU·h, last 7 d"),
            "x": names,
            "y": [r["checkpoint_gpu_hours_7d"] for r in rows],
            "marker": {"color": GpuHours.CHECKPOINT.colour},
            "hovertemplate": "%{y:,.1f} GPU·h<extra>" + _("checkpointing") + "</extra>",
        },
        {
            "type": "bar",
            "name": _("saved a week at the advised interval"),
            "x": names,
            "y": [r["advice"].gpu_hours_saved_per_week for r in rows],
            "marker": {"color": GpuHours.PRODUCTIVE.colour},
            "hovertemplate": _("%{y:,.1f} GPU·h / week") + "<extra>" + _("advice") + "</extra>",
        },
    ]
    layout = base_layout(
        height=320,
        barmode="group",
        hovermode="x",
        # the legend over the plot, under the toolbar's band: clear of the slanted job names
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 1, "yanchor": "bottom"},
        margin={"l": 60, "r": 20, "t": TOOLBAR_PX + 28, "b": 120},
        xaxis={"tickangle": -35},
        yaxis={"title": {"text": _("GPU-hours")}},
    )
    return {"data": traces, "layout": layout, "config": CONFIG}
