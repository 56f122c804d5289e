"""The node page's charts read true (issue 42, layout): a panel of one reading or one value is
a single labelled tick with the value said, not Plotly's 0–1 around a dot; a 0–1 series
(tensor activity) is drawn on 0–1 even with no readings; a panel with no readings says so
and shows no made-up scale; and charts whose readings cover much less than the range the
page names say the true span."""

from __future__ import annotations

import datetime as dt

from apps.telemetry.gpu_charts import compact, gpu_history_figure
from apps.telemetry.gpu_history import GPU_PANELS, GPUHistory, Trace, Window
from apps.telemetry.port_history import COUNTER_PANELS, NOT_ACTIVE_PANEL

NOW = dt.datetime(2026, 1, 10, 12, 0, tzinfo=dt.UTC)
DAY = Window("24h", "24 h", NOW - dt.timedelta(hours=24), NOW, 60)


def _axes(figure: dict) -> list[dict]:
    layout = figure["layout"]
    return [layout["yaxis" if n == 1 else f"yaxis{n}"] for n in range(1, len(GPU_PANELS) + 1)]


def _texts(figure: dict) -> list[str]:
    return [a["text"] for a in figure["layout"]["annotations"]]


def test_a_port_chart_of_one_reading_says_the_value_on_a_single_tick() -> None:
    at = (NOW - dt.timedelta(minutes=5)).timestamp()
    history = GPUHistory(DAY, "rollups", per_gpu=False, what="port readings")
    for panel in COUNTER_PANELS:
        history.panels.append((panel, [Trace("node, summed over ports", [at], [0.0])]))
    history.panels.append((NOT_ACTIVE_PANEL, [Trace("node", [at], [0.0])]))
    figure = gpu_history_figure(history)
    layout = figure["layout"]
    for n in range(1, 9):
        axis = layout["yaxis" if n == 1 else f"yaxis{n}"]
        assert axis["tickvals"] == [0.0] and axis["ticktext"] == ["0"], axis
        low, high = axis["range"]
        assert low < 0 < high and high - low == 2.0, axis  # the dot in the middle of its cell
    assert sum("one reading: 0 /s at 11:55 UTC" in t for t in _texts(figure)) == 7
    assert "one reading: 0 ports at 11:55 UTC" in _texts(figure)


def test_a_tensor_activity_with_no_readings_is_drawn_on_0_to_1_and_says_so() -> None:
    x = [(NOW - dt.timedelta(minutes=m)).timestamp() for m in range(600, 0, -5)]
    history = GPUHistory(DAY, "rollups", per_gpu=False)
    for panel in GPU_PANELS:
        blank = panel.key in ("sm_clock_mhz", "tensor_active")  # a Moore Threads node's
        y = [None if blank else 50.0 + i % 7 for i in range(len(x))]
        history.panels.append((panel, [Trace("node mean", x, y, low=y, high=y)]))
    figure = gpu_history_figure(history)
    axes = dict(zip([p.key for p in GPU_PANELS], _axes(figure), strict=True))
    assert axes["tensor_active"]["range"] == [0, 1]
    assert axes["gpu_util"]["range"] == [0, 100]
    assert axes["sm_clock_mhz"]["showticklabels"] is False  # no readings: no 0–4 scale
    assert "range" not in axes["temp_c"] and "showticklabels" not in axes["temp_c"]
    assert _texts(figure).count("no readings over 24 h") == 2


def test_charts_say_the_true_span_when_readings_cover_less_than_the_range() -> None:
    two_hours = [(NOW - dt.timedelta(minutes=m)).timestamp() for m in range(120, -1, -5)]
    history = GPUHistory(DAY, "rollups", per_gpu=False)
    for panel in GPU_PANELS:
        y = [0.5] * len(two_hours)
        history.panels.append((panel, [Trace("node mean", two_hours, y)]))
    layout = gpu_history_figure(history)["layout"]
    assert (
        layout["title"]["text"] == "Readings only since 2026-01-10 10:00 UTC: 2 h of the 24 h shown"
    )
    assert layout["margin"]["t"] > 36  # room for it under the toolbar's band
    # the x axis stays the range the page names: the empty 22 h are seen as empty
    assert layout["xaxis"]["range"] == ["2026-01-09T12:00:00Z", "2026-01-10T12:00:00Z"]
    # a full day of readings: nothing to say
    day = [(NOW - dt.timedelta(minutes=m)).timestamp() for m in range(1440, -1, -5)]
    full = GPUHistory(DAY, "rollups", per_gpu=False)
    for panel in GPU_PANELS:
        full.panels.append((panel, [Trace("node mean", day, [0.5] * len(day))]))
    assert "title" not in gpu_history_figure(full)["layout"]


def test_compact_numbers() -> None:
    assert [compact(v) for v in (0, 0.4213, 7.0, 1234.0, 56_789.0, 3_400_000.0)] == [
        "0",
        "0.421",
        "7",
        "1.23k",
        "56.8k",
        "3.4M",
    ]
