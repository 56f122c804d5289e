"""Chart figures as plain Plotly JSON, built here (not in views or templates).

Figures are dicts rather than plotly.graph_objects: validation in graph_objects costs
tens of milliseconds per shape, and these endpoints are polled all day.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.common.charts import (
    CONFIG,
    RANGE_BUTTONS,
    SERIES,
    base_layout,
    reference_line,
    target_line,
    translucent,
)
from apps.common.choices import Series, Tone
from apps.fleet.models import Node
from apps.fleet.selectors import node_rollups
from apps.incidents.models import Incident
from apps.jobs.models import Job
from apps.jobs.selectors import job_metric_series
from apps.reports.choices import GpuHours
from apps.reports.targets import MFU_REFERENCE, MFU_REFERENCE_LABEL, target_text

MAX_SHAPES = 300


def _iso(ts: float | dt.datetime) -> str:
    if isinstance(ts, dt.datetime):
        return ts.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _line(x: list[str], y: list[Any], name: str, axis: str, hover: str) -> dict[str, Any]:
    return {
        "type": "scattergl" if len(x) > 5000 else "scatter",
        "mode": "lines",
        "name": name,
        "x": x,
        "y": y,
        "xaxis": "x",
        "yaxis": axis,
        "line": {"color": SERIES[name], "width": 1.3},
        "hovertemplate": hover,
    }


def job_progress_figure(*, job: Job, mfu_target: float, max_points: int = 2_000) -> dict[str, Any]:
    """MFU, throughput and loss on one time axis, with interruptions shaded and checkpoints
    marked, the cluster's MFU target and the best public MFU as a reference; at most
    `max_points` per trace."""
    series = job_metric_series(job=job, max_points=max_points)
    x = [_iso(t) for t in series["ts"]]
    loss = [v if isinstance(v, float) else None for v in series["loss"]]
    traces = [
        _line(x, series["mfu"], "mfu", "y", "%{y:.1%}<extra>MFU</extra>"),
        _line(x, series["tokens_per_s"], "tokens_per_s", "y2", "%{y:,.0f}<extra>tokens/s</extra>"),
        _line(x, loss, "loss", "y3", "%{y:.3f}<extra>loss</extra>"),
    ]
    checkpoints = list(
        job.checkpoints.order_by("-saved_at").values_list("saved_at", flat=True)[:MAX_SHAPES]
    )
    if checkpoints:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "checkpoint",
                "xaxis": "x",
                "yaxis": "y",
                "x": [_iso(c) for c in checkpoints],
                "y": [0] * len(checkpoints),
                "marker": {"symbol": "triangle-up", "size": 6, "color": SERIES["target"]},
                "hovertemplate": "checkpoint<extra></extra>",
            }
        )
    now = dt.datetime.now(tz=dt.UTC)
    shapes: list[dict[str, Any]] = [
        target_line(mfu_target, label=f"target {target_text('mean_mfu', mfu_target)}"),
        reference_line(MFU_REFERENCE, MFU_REFERENCE_LABEL),
    ]
    for occurred, detected, recovered in (
        Incident.objects.filter(job=job, interrupts_job=True)
        .order_by("-detected_at")
        .values_list("occurred_at", "detected_at", "recovered_at")[:MAX_SHAPES]
    ):
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "layer": "below",
                "x0": _iso(occurred or detected),
                "x1": _iso(recovered or job.ended_at or now),
                "fillcolor": Tone.BAD.colour,
                "opacity": 0.2,
                "line": {"width": 0},
            }
        )
    layout = base_layout(
        height=600,
        showlegend=False,
        shapes=shapes,
        xaxis={
            "type": "date",
            "rangeselector": {"buttons": RANGE_BUTTONS, "x": 0, "y": 1.06},
            "anchor": "y3",
        },
        yaxis={
            "domain": [0.70, 1],
            "tickformat": ".0%",
            "rangemode": "tozero",
            "title": {"text": "MFU"},
        },
        yaxis2={"domain": [0.36, 0.64], "rangemode": "tozero", "title": {"text": "tokens/s"}},
        yaxis3={"domain": [0, 0.30], "title": {"text": "loss"}},
    )
    return {"data": traces, "layout": layout, "config": CONFIG}


NODE_PANELS = (
    ("temp_c", "GPU temp (°C)", Series.TEMP_C.colour),
    ("gpu_util", "GPU util (%)", Series.GPU_UTIL.colour),
    ("power_w", "Power per GPU (W)", Series.POWER_W.colour),
)


def node_telemetry_figure(*, node: Node, hours: int = 24) -> dict[str, Any]:
    """A node's 5-minute rollups: mean across its GPUs with the min–max band, per metric."""
    since = dt.datetime.now(tz=dt.UTC) - dt.timedelta(hours=hours)
    rows = node_rollups(node=node, since=since)
    x = [_iso(r.bucket) for r in rows]
    traces: list[dict[str, Any]] = []
    for i, (metric, title, colour) in enumerate(NODE_PANELS, start=1):
        axis = "y" if i == 1 else f"y{i}"
        lows = [getattr(r, f"{metric}_min") for r in rows]
        highs = [getattr(r, f"{metric}_max") for r in rows]
        traces += [
            {
                "type": "scatter",
                "mode": "lines",
                "x": x,
                "y": highs,
                "yaxis": axis,
                "line": {"width": 0},
                "showlegend": False,
                "hoverinfo": "skip",
            },
            {
                "type": "scatter",
                "mode": "lines",
                "x": x,
                "y": lows,
                "yaxis": axis,
                "fill": "tonexty",
                "fillcolor": translucent(colour, 0.2),
                "line": {"width": 0},
                "showlegend": False,
                "hoverinfo": "skip",
            },
            {
                "type": "scatter",
                "mode": "lines",
                "x": x,
                "y": [r.mean(metric) for r in rows],
                "yaxis": axis,
                "name": title,
                "line": {"color": colour, "width": 1.5},
                "hovertemplate": "%{y:.1f}<extra>" + title + " mean</extra>",
            },
        ]
    n = len(NODE_PANELS)
    gap = 0.06
    height = (1 - gap * (n - 1)) / n
    axes = {}
    for i, (_, title, _) in enumerate(NODE_PANELS, start=1):
        top = 1 - (i - 1) * (height + gap)
        axes["yaxis" if i == 1 else f"yaxis{i}"] = {
            "domain": [top - height, top],
            "title": {"text": title, "font": {"size": 11}},
        }
    layout = base_layout(
        height=420,
        showlegend=False,
        xaxis={
            "type": "date",
            "anchor": f"y{n}",
            "rangeselector": {"buttons": RANGE_BUTTONS[:3], "x": 0, "y": 1.08},
        },
        **axes,
    )
    return {"data": traces, "layout": layout, "config": CONFIG}


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
            "x": [c["category"] for c in by_count],
            "y": [c["count"] for c in by_count],
            "marker": {"color": SERIES["mfu"]},
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "cumulative share",
            "x": [c["category"] for c in by_count],
            "y": cumulative,
            "yaxis": "y2",
            "line": {"color": SERIES["target"]},
            "hovertemplate": "%{y:.0%}<extra></extra>",
        },
        {
            "type": "bar",
            "name": "lost GPU-hours",
            "x": [c["category"] for c in by_cost],
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
