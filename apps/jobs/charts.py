"""The job page's progress chart as plain Plotly JSON (dicts rather than
plotly.graph_objects: validation there costs tens of milliseconds per shape, and the chart
is polled all day)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils.translation import gettext as _

from apps.common.charts import (
    CONFIG,
    RANGE_BUTTONS,
    SERIES,
    base_layout,
    iso,
    line_style,
    reference_line,
    target_line,
)
from apps.common.choices import Tone
from apps.jobs.models import Job
from apps.jobs.readers import job_interruptions, mfu_lines
from apps.jobs.selectors import CheckpointMark, checkpoint_marks, job_metric_series

MAX_SHAPES = 300
MAX_CHECKPOINT_MARKS = 300
# The y-axis of the checkpoints' strip: one row, no scale, so no checkpoint reads as data.
CHECKPOINT_STRIP = {
    "domain": [0, 0.05],
    "range": [0, 1],
    "fixedrange": True,
    "showgrid": False,
    "zeroline": False,
    "tickmode": "array",
    "tickvals": [0.5],
    "ticktext": ["checkpoints"],
    "tickfont": {"size": 10},
}


def _when(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _checkpoint_text(mark: CheckpointMark) -> str:
    """What hovering a mark says: step, time and how long training paused (for a mark of
    several checkpoints, their count, steps, times and shortest to longest pause)."""
    if mark.count == 1:
        return _("checkpoint at step %(step)s<br>%(when)s<br>training paused %(pause)s") % {
            "step": f"{mark.step_lo:,}",
            "when": _when(mark.first),
            "pause": f"{mark.blocking_hi:,.1f} s",
        }
    pause = f"{mark.blocking_lo:,.1f}–{mark.blocking_hi:,.1f} s"
    return _(
        "%(count)s checkpoints, steps %(steps)s<br>%(span)s<br>training paused %(pause)s each"
    ) % {
        "count": mark.count,
        "steps": f"{mark.step_lo:,}–{mark.step_hi:,}",
        "span": f"{_when(mark.first)} – {_when(mark.last)}",
        "pause": pause,
    }


def _checkpoint_strip(marks: list[CheckpointMark]) -> dict[str, Any]:
    """One trace of thin vertical ticks on the checkpoint strip (its own small axis), one
    per mark, at the middle of the saves it stands for."""
    return {
        "type": "scatter",
        "mode": "markers",
        "name": "checkpoint",
        "xaxis": "x",
        "yaxis": "y4",
        "x": [iso((m.first + m.last) / 2) for m in marks],
        "y": [0.5] * len(marks),
        "hovertext": [_checkpoint_text(m) for m in marks],
        "hovertemplate": "%{hovertext}<extra></extra>",
        "marker": {
            "symbol": "line-ns",
            "size": 14,
            "line": {"width": 1.5, "color": SERIES["target"]},
        },
    }


def _line(x: list[str], y: list[Any], name: str, axis: str, hover: str) -> dict[str, Any]:
    return {
        "type": "scattergl" if len(x) > 5000 else "scatter",
        **line_style(y, SERIES[name]),
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
    loss_word = _("loss")
    traces = [
        _line(x, series["mfu"], "mfu", "y", "%{y:.1%}<extra>MFU</extra>"),
        _line(x, series["tokens_per_s"], "tokens_per_s", "y2", "%{y:,.0f}<extra>tokens/s</extra>"),
        _line(x, loss, "loss", "y3", "%{y:.3f}<extra>" + loss_word + "</extra>"),
    ]
    now = dt.datetime.now(tz=dt.UTC)
    marks = checkpoint_marks(job=job, limit=MAX_CHECKPOINT_MARKS, now=now)
    if marks:
        traces.append(_checkpoint_strip(marks))
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
        height=620,
        showlegend=False,
        shapes=shapes,
        margin={"l": 76, "r": 20, "t": 30, "b": 40},
        xaxis={
            "type": "date",
            "rangeselector": {"buttons": RANGE_BUTTONS, "x": 0, "y": 1.06},
            "anchor": "y4" if marks else "y3",
        },
        yaxis={
            "domain": [0.72, 1],
            "tickformat": ".0%",
            "rangemode": "tozero",
            "title": {"text": "MFU"},
        },
        yaxis2={"domain": [0.41, 0.66], "rangemode": "tozero", "title": {"text": "tokens/s"}},
        yaxis3={"domain": [0.10, 0.35] if marks else [0, 0.35], "title": {"text": loss_word}},
    )
    if marks:  # their own strip under the loss panel: a tick per save on no value scale
        layout["yaxis4"] = {**CHECKPOINT_STRIP, "ticktext": [_("checkpoints")]}
    return {"data": traces, "layout": layout, "config": CONFIG}
