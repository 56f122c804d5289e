"""Week-by-week charts: a week with no failure or no data is never drawn as 0 (a gap, a
marked "no failure" or a "no data" note), a real 0 stays 0; the reliability chart has no
axis on its right to collide with; categories read as words, not slugs."""

from __future__ import annotations

import datetime as dt
from typing import Any

from apps.common.choices import Tone
from apps.reports.chart_weeks import week_ticks
from apps.reports.choices import LOSS_CAUSES, GpuHours
from apps.reports.reliability_charts import reliability_trend_figure
from apps.reports.weekly_charts import (
    availability_heatmap_figure,
    effective_by_week_figure,
    waterfall_figure,
    wrap,
)

WEEK_HOURS = 168.0


def rel_week(label: str, failures: int, *, in_service: bool = True, **extra: Any) -> dict:
    """One week of `weekly_reliability` as the pure maths writes it."""
    return {
        "week": label,
        "complete": True,
        "hours": WEEK_HOURS,
        "interruptions": failures,
        "mtbf_hours": WEEK_HOURS / failures if failures else None,
        "mttr_minutes": 30.0 if failures else None,
        "node_days": 7.0 * 64 if in_service else 0.0,
        **extra,
    }


def test_a_week_without_failure_is_a_mark_at_the_top_never_a_zero_bar() -> None:
    weeks = [
        rel_week("2026-W40", 0, in_service=False),
        rel_week("2026-W41", 4),
        rel_week("2026-W42", 0),
        rel_week("2026-W43", 2, complete=False),
    ]
    fig = reliability_trend_figure(weeks, mtbf_target=360.0)
    bars, calm, mttr = fig["data"]
    assert bars["y"] == [None, 42.0, None, 84.0]
    assert bars["customdata"] == [0, 4, 0, 2]  # 0 interruptions is a real 0, in the hover
    assert mttr["y"] == [None, 30.0, None, 30.0]
    assert calm["x"] == ["2026-W42"] and calm["marker"]["color"] == Tone.GOOD.colour
    assert calm["hovertext"] == ["0 unexpected interruptions in 168 h: MTBF longer than the week"]
    yaxis = fig["layout"]["yaxis"]
    # the mark sits above every tick, so it cannot be read as an MTBF value
    assert calm["y"][0] > max(yaxis["tickvals"]) and calm["y"][0] > 360
    assert 10 ** yaxis["range"][1] > calm["y"][0]
    [note] = fig["layout"]["annotations"]
    assert (note["x"], note["text"]) == ("2026-W40", "no<br>data")
    assert note["hovertext"] == "2026-W40: no node was in service"


def test_reliability_chart_has_no_axis_on_its_right() -> None:
    fig = reliability_trend_figure([rel_week("2026-W41", 4), rel_week("2026-W42", 1)], 360.0)
    layout = fig["layout"]
    axes = {k: v for k, v in layout.items() if k.startswith("yaxis")}
    assert set(axes) == {"yaxis", "yaxis2"}
    assert all(a.get("side", "left") == "left" and "overlaying" not in a for a in axes.values())
    top, bottom = sorted((a["domain"] for a in axes.values()), reverse=True)
    assert bottom[1] < top[0]  # MTTR in its own panel under MTBF, not drawn over it
    assert layout["xaxis"]["tickangle"] == 0 and layout["xaxis"]["anchor"] == "y2"
    assert layout["legend"]["y"] > 1 and layout["legend"]["yanchor"] == "bottom"
    assert layout["yaxis"]["ticktext"] == ["2 d", "4 d", "7 d", "15 d"]  # 42 h to the target


def test_week_ticks_are_short_and_say_the_year_once() -> None:
    assert week_ticks(["2026-W52", "2026-W53", "2027-W01", "2027-W02"], [True] * 3 + [False]) == [
        "W52<br>2026",
        "W53",
        "W01<br>2027",
        "W02<br>so far",
    ]


def eff_week(label: str, scheduled: float, lost: float) -> dict:
    """One week of `effective_by_week`."""
    return {
        "week": label,
        "label": label,
        "complete": True,
        "start": dt.datetime(2026, 1, 5, tzinfo=dt.UTC),
        "effective_rate": (scheduled - lost) / scheduled if scheduled else None,
        "scheduled_gpu_hours": scheduled,
        "lost_gpu_hours": {c.value: (lost if c is GpuHours.DOWNTIME else 0.0) for c in LOSS_CAUSES},
    }


def test_a_week_without_jobs_is_a_gap_and_a_week_without_loss_a_real_zero() -> None:
    weeks = [eff_week("2026-W40", 1000.0, 10.0), eff_week("2026-W41", 0.0, 0.0)]
    weeks.append(eff_week("2026-W42", 1000.0, 0.0))
    fig = effective_by_week_figure(weeks, 0.99)
    by_name = {t["name"]: t for t in fig["data"]}
    assert by_name["effective rate"]["y"] == [0.99, None, 1.0]
    assert by_name[GpuHours.DOWNTIME.label]["y"] == [10.0, None, 0.0]
    assert by_name[GpuHours.REWORK.label]["y"] == [0.0, None, 0.0]
    [note] = fig["layout"]["annotations"]
    assert note["x"] == "2026-W41" and note["hovertext"] == "2026-W41: no job ran"
    assert fig["layout"]["xaxis"]["ticktext"] == ["W40<br>2026", "W41", "W42"]


def test_waterfall_names_the_causes_in_words() -> None:
    lost = {c.value: 1.0 for c in LOSS_CAUSES}
    fig = waterfall_figure(
        {"scheduled_gpu_hours": 100.0, "productive_gpu_hours": 96.0, "lost_gpu_hours": lost}
    )
    x = fig["data"][0]["x"]
    assert x == [
        "scheduled",
        "failure downtime",
        "planned downtime",
        "rework since checkpoint",
        "checkpoint blocking",
        "productive",
    ]
    assert fig["layout"]["xaxis"]["ticktext"][3] == "rework since<br>checkpoint"
    assert wrap("productive") == "productive"


def test_heat_map_gaps_have_no_hover() -> None:
    day = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)
    fig = availability_heatmap_figure(
        {"days": [day], "heatmap": [{"hostname": "gpu001", "by_day": [None]}]}
    )
    assert fig["data"][0]["z"] == [[None]] and fig["data"][0]["hoverongaps"] is False
