"""The reliability page's figures as plain Plotly JSON: MTBF and MTTR by week, the Pareto of
causes (dicts rather than plotly.graph_objects, like every chart here)."""

from __future__ import annotations

from typing import Any

from apps.common.charts import CONFIG, SERIES, base_layout, target_line
from apps.incidents.choices import category_label
from apps.reports.choices import GpuHours
from apps.reports.targets import target_text


def reliability_trend_figure(weeks: list[dict[str, Any]], mtbf_target: float) -> dict[str, Any]:
    """Cluster MTBF (bars, hours) against its target (a floor) and MTTR (line, minutes) per
    ISO week; the week in progress is labelled "so far"."""
    x = [w["week"] + ("" if w.get("complete", True) else " (so far)") for w in weeks]
    traces = [
        {
            "type": "bar",
            "name": "cluster MTBF (h)",
            "x": x,
            "y": [w["mtbf_hours"] for w in weeks],
            "marker": {"color": SERIES["mfu"]},
            "hovertemplate": "%{y:.1f} h<extra>cluster MTBF</extra>",
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "MTTR (min)",
            "x": x,
            "y": [w["mttr_minutes"] for w in weeks],
            "yaxis": "y2",
            "line": {"color": SERIES["mttr"]},
            "hovertemplate": "%{y:.1f} min<extra>MTTR</extra>",
        },
    ]
    layout = base_layout(
        height=320,
        showlegend=True,
        hovermode="x",
        yaxis={"title": {"text": "cluster MTBF (hours, log)"}, "type": "log"},
        yaxis2={
            "title": {"text": "MTTR (minutes)"},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
        },
        shapes=[
            target_line(
                mtbf_target, label=f"cluster MTBF target {target_text('mtbf_hours', mtbf_target)}"
            )
        ],
    )
    return {"data": traces, "layout": layout, "config": CONFIG}


def pareto_figure(categories: list[dict[str, Any]]) -> dict[str, Any]:
    """Causes by count with the cumulative share, and by lost GPU-hours."""
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
            "name": "interruptions",
            "x": [category_label(c["category"]) for c in by_count],
            "y": [c["count"] for c in by_count],
            "marker": {"color": SERIES["mfu"]},
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "cumulative share",
            "x": [category_label(c["category"]) for c in by_count],
            "y": cumulative,
            "yaxis": "y2",
            "line": {"color": SERIES["target"]},
            "hovertemplate": "%{y:.0%}<extra></extra>",
        },
        {
            "type": "bar",
            "name": "lost GPU-hours",
            "x": [category_label(c["category"]) for c in by_cost],
            "y": [c["lost_gpu_hours"] for c in by_cost],
            "xaxis": "x2",
            "yaxis": "y3",
            "marker": {"color": GpuHours.DOWNTIME.colour},
            "hovertemplate": "%{y:,.0f} GPU·h<extra></extra>",
        },
    ]
    layout = base_layout(
        height=380,
        showlegend=True,
        hovermode="closest",
        xaxis={"domain": [0, 0.47], "tickangle": -40},
        xaxis2={"domain": [0.53, 1], "tickangle": -40, "anchor": "y3"},
        yaxis={"title": {"text": "interruptions"}},
        yaxis2={
            "overlaying": "y",
            "side": "right",
            "tickformat": ".0%",
            "range": [0, 1.05],
            "position": 0.47,
            "anchor": "free",
        },
        yaxis3={"anchor": "x2", "title": {"text": "lost GPU-hours"}},
        margin={"l": 60, "r": 20, "t": 30, "b": 110},
    )
    return {"data": traces, "layout": layout, "config": CONFIG}
