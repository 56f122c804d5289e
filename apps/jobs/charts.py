"""The job page's progress chart as plain Plotly JSON (dicts rather than
plotly.graph_objects: validation there costs tens of milliseconds per shape, and the chart
is polled all day)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.common.charts import (
    CONFIG,
    RANGE_BUTTONS,
    SERIES,
    base_layout,
    iso,
    reference_line,
    target_line,
)
from apps.common.choices import Tone
from apps.jobs.models import Job
from apps.jobs.readers import job_interruptions, mfu_lines
from apps.jobs.selectors import checkpoint_times, job_metric_series

MAX_SHAPES = 300


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


def job_progress_figure(*, job: Job, max_points: int = 2_000) -> dict[str, Any]:
    """MFU, throughput and loss on one time axis, with interruptions shaded and checkpoints
    marked, the cluster's MFU target and the best public MFU as a reference; at most
    `max_points` per trace."""
    series = job_metric_series(job=job, max_points=max_points)
    x = [iso(t) for t in series["ts"]]
    loss = [v if isinstance(v, float) else None for v in series["loss"]]
    traces = [
        _line(x, series["mfu"], "mfu", "y", "%{y:.1%}<extra>MFU</extra>"),
        _line(x, series["tokens_per_s"], "tokens_per_s", "y2", "%{y:,.0f}<extra>tokens/s</extra>"),
        _line(x, loss, "loss", "y3", "%{y:.3f}<extra>loss</extra>"),
    ]
    checkpoints = checkpoint_times(job=job, limit=MAX_SHAPES)
    if checkpoints:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "checkpoint",
                "xaxis": "x",
                "yaxis": "y",
                "x": [iso(c) for c in checkpoints],
                "y": [0] * len(checkpoints),
                "marker": {"symbol": "triangle-up", "size": 6, "color": SERIES["target"]},
                "hovertemplate": "checkpoint<extra></extra>",
            }
        )
    now = dt.datetime.now(tz=dt.UTC)
    levels = mfu_lines(job.cluster)
    shapes: list[dict[str, Any]] = []
    if levels.target is not None:
        shapes.append(target_line(levels.target.value, label=levels.target.label))
    if levels.reference is not None:
        shapes.append(reference_line(levels.reference.value, levels.reference.label))
    for start, recovered in job_interruptions(job.pk, limit=MAX_SHAPES):
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "layer": "below",
                "x0": iso(start),
                "x1": iso(recovered or job.ended_at or now),
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
