"""Chart figures, built here (not in views or templates), as Plotly JSON."""

from __future__ import annotations

import datetime as dt
from typing import Any

from plotly.subplots import make_subplots

from apps.common.charts import CONFIG, RANGE_BUTTONS, SERIES, base_layout
from apps.incidents.models import Incident
from apps.jobs.models import Job
from apps.jobs.selectors import job_metric_series

MAX_SHAPES = 200


def _iso(ts: float | dt.datetime) -> str:
    if isinstance(ts, dt.datetime):
        return ts.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_progress_figure(*, job: Job, max_points: int = 2_000) -> dict[str, Any]:
    """MFU, throughput and loss on one time axis, with interruptions shaded and checkpoints
    marked; at most `max_points` per trace."""
    series = job_metric_series(job=job, max_points=max_points)
    x = [_iso(t) for t in series["ts"]]
    loss = [v if isinstance(v, float) else None for v in series["loss"]]
    fig = make_subplots(
        rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.07,
        subplot_titles=("MFU", "Throughput (tokens/s)", "Loss"),
    )
    fig.add_scatter(
        x=x, y=series["mfu"], name="MFU", mode="lines", row=1, col=1,
        line={"color": SERIES["mfu"], "width": 1.4},
        hovertemplate="%{y:.1%}<extra>MFU</extra>",
    )
    fig.add_scatter(
        x=x, y=series["tokens_per_s"], name="tokens/s", mode="lines", row=2, col=1,
        line={"color": SERIES["tokens_per_s"], "width": 1.2},
        hovertemplate="%{y:,.0f}<extra>tokens/s</extra>",
    )
    fig.add_scatter(
        x=x, y=loss, name="loss", mode="lines", row=3, col=1,
        line={"color": SERIES["loss"], "width": 1.2},
        hovertemplate="%{y:.3f}<extra>loss</extra>",
    )
    checkpoints = list(
        job.checkpoints.order_by("-saved_at").values_list("saved_at", flat=True)[:MAX_SHAPES]
    )
    if checkpoints:
        fig.add_scatter(
            x=[_iso(c) for c in checkpoints], y=[0] * len(checkpoints), name="checkpoint",
            mode="markers", row=1, col=1,
            marker={"symbol": "triangle-up", "size": 7, "color": SERIES["target"]},
            hovertemplate="checkpoint %{x}<extra></extra>",
        )
    now = dt.datetime.now(tz=dt.UTC)
    interruptions = (
        Incident.objects.filter(job=job, interrupts_job=True)
        .order_by("-detected_at")
        .values_list("occurred_at", "detected_at", "recovered_at")[:MAX_SHAPES]
    )
    for occurred, detected, recovered in interruptions:
        fig.add_vrect(
            x0=_iso(occurred or detected), x1=_iso(recovered or job.ended_at or now),
            fillcolor="#d62728", opacity=0.18, line_width=0, layer="below",
        )

    fig.add_hline(
        y=0.60, line={"dash": "dot", "color": SERIES["target"], "width": 1}, row=1, col=1,
    )
    fig.update_yaxes(tickformat=".0%", rangemode="tozero", row=1, col=1)
    fig.update_xaxes(type="date")
    fig.update_layout(
        **base_layout(height=600, showlegend=False),
        xaxis={"rangeselector": {"buttons": RANGE_BUTTONS}, "type": "date"},
    )
    out = fig.to_plotly_json()
    return {"data": out["data"], "layout": out["layout"], "config": CONFIG}
