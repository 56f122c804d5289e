"""The report charts' layout (issue 42): the Causes chart's two panels never share a band of
the figure, the trends charts' range buttons sit in a row under the toolbar's band, every
chart leaves the toolbar its band at the top, and the checkpoint chart's legend sits over the
plot, clear of its slanted job names."""

from __future__ import annotations

import datetime as dt

from apps.common.charts import CONFIG, TOOLBAR_PX, base_layout
from apps.reports.choices import LOSS_CAUSES
from apps.reports.planning import checkpoint_advice
from apps.reports.reliability_charts import pareto_figure
from apps.reports.weekly_charts import (
    availability_figure,
    checkpoint_cost_figure,
    mfu_figure,
    waterfall_figure,
)

H = [dt.datetime(2026, 1, 1, h, tzinfo=dt.UTC) for h in range(3)]
CAUSES = [
    {"category": "gpu_hw", "count": 3, "lost_gpu_hours": 120.0},
    {"category": "network", "count": 2, "lost_gpu_hours": 300.0},
    {"category": "software", "count": 1, "lost_gpu_hours": 10.0},
]


def test_the_causes_panels_are_one_above_the_other_and_never_overlap() -> None:
    layout = pareto_figure(CAUSES)["layout"]
    count, cost = layout["yaxis"]["domain"], layout["yaxis3"]["domain"]
    assert cost[1] < count[0]  # the cost panel wholly under the count panel
    # the gap between them: room for the count panel's slanted cause names (≥ 80 px)
    plot_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    assert (count[0] - cost[1]) * plot_px >= 80
    # each panel spans the width: no axis of one reaches into the other
    assert layout["xaxis"].get("domain", [0, 1]) == [0, 1]
    assert layout["xaxis2"].get("domain", [0, 1]) == [0, 1]
    assert layout["xaxis2"]["anchor"] == "y3" and layout["yaxis3"]["anchor"] == "x2"
    assert layout["yaxis2"]["overlaying"] == "y" and layout["yaxis2"]["side"] == "right"
    assert "position" not in layout["yaxis2"]
    assert layout["showlegend"] is False  # the axes are titled; no legend to crowd them
    titles = {layout[k]["title"]["text"] for k in ("yaxis", "yaxis2", "yaxis3")}
    assert titles == {"interruptions", "cumulative share", "lost GPU-hours"}


def test_range_buttons_sit_under_the_toolbar_band() -> None:
    series = {"hours": H, "cluster": [0.4, 0.41, 0.42], "jobs": [], "availability": [1, 1, 0.9]}
    for figure in (mfu_figure(series, 0.4), availability_figure(series, 0.95)):
        layout = figure["layout"]
        selector = layout["xaxis"]["rangeselector"]
        assert (selector["x"], selector["xanchor"]) == (0, "left")
        assert (selector["y"], selector["yanchor"]) == (1, "bottom")  # just over the plot
        # the top margin holds the toolbar's band and, under it, the buttons' row
        assert layout["margin"]["t"] >= TOOLBAR_PX + 28


def test_every_chart_leaves_the_toolbar_its_band_and_the_toolbar_is_short() -> None:
    assert base_layout()["margin"]["t"] >= TOOLBAR_PX
    report = {
        "scheduled_gpu_hours": 1000.0,
        "productive_gpu_hours": 900.0,
        "lost_gpu_hours": {c.value: 10.0 for c in LOSS_CAUSES},
    }
    assert waterfall_figure(report)["layout"]["margin"]["t"] >= TOOLBAR_PX
    assert {"lasso2d", "select2d", "zoomIn2d", "zoomOut2d"} <= set(CONFIG["modeBarButtonsToRemove"])
    assert CONFIG["displaylogo"] is False


def test_the_checkpoint_legend_is_over_the_plot_clear_of_the_job_names() -> None:
    advice = checkpoint_advice(
        gpu_count=64,
        saves=[(0.0, 8.0), (1800.0, 8.0), (3600.0, 8.0)],
        mtbf_hours=40.0,
        mtbf_source="measured",
    )
    rows = [{"name": "llama-405b-pretrain", "checkpoint_gpu_hours_7d": 60.0, "advice": advice}]
    layout = checkpoint_cost_figure(rows)["layout"]
    assert layout["legend"]["yanchor"] == "bottom" and layout["legend"]["y"] >= 1
    assert layout["xaxis"]["tickangle"] == -35 and layout["margin"]["b"] >= 100
    assert layout["margin"]["t"] >= TOOLBAR_PX + 20  # the legend's row under the toolbar's band
