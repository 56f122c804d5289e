"""The node page's telemetry chart as plain Plotly JSON (dicts, like every chart here)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.common.charts import CONFIG, RANGE_BUTTONS, base_layout, iso, line_style, translucent
from apps.common.choices import Series
from apps.fleet.models import Node
from apps.telemetry.selectors import node_rollups

NODE_PANELS = (
    ("temp_c", "GPU temp (°C)", Series.TEMP_C),
    ("gpu_util", "GPU util (%)", Series.GPU_UTIL),
    ("power_w", "Power per GPU (W)", Series.POWER_W),
)


def node_telemetry_figure(*, node: Node, hours: int = 24) -> dict[str, Any]:
    """A node's 5-minute rollups: mean across its GPUs with the min–max band, per metric."""
    since = dt.datetime.now(tz=dt.UTC) - dt.timedelta(hours=hours)
    rows = node_rollups(node=node, since=since)
    x = [iso(r.bucket) for r in rows]
    traces: list[dict[str, Any]] = []
    for i, (metric, title, series) in enumerate(NODE_PANELS, start=1):
        axis = "y" if i == 1 else f"y{i}"
        colour = series.colour
        lows = [getattr(r, f"{metric}_min") for r in rows]
        highs = [getattr(r, f"{metric}_max") for r in rows]
        means = [r.mean(metric) for r in rows]
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
                **line_style(means, colour),
                "x": x,
                "y": means,
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
