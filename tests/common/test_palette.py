"""One palette: the choices classes' `palette()` is the only place a state's colour is chosen;
the stylesheet, the CSS rules and the charts all read it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from apps.common.choices import PALETTES, Hue, palette_css
from apps.fleet.choices import NodeState
from apps.reports.choices import LOSS_CAUSES, GpuHours
from apps.reports.effective import CAUSES
from apps.reports.weekly_charts import availability_heatmap_figure, waterfall_figure

ROOT = Path(__file__).resolve().parents[2]
HEX = re.compile(r"#[0-9a-fA-F]{6}\b")
REPORT = {
    "scheduled_gpu_hours": 100.0,
    "productive_gpu_hours": 90.0,
    "lost_gpu_hours": {"downtime": 4.0, "planned": 3.0, "rework": 2.0, "checkpoint": 1.0},
}


def test_every_app_registers_its_palette() -> None:
    assert {"state", "job", "cond", "sev", "inc", "pm", "alert", "res", "run", "cause"} <= set(
        PALETTES
    )
    assert {"tone", "series"} <= set(PALETTES)


@pytest.mark.django_db
def test_a_colour_changed_in_a_palette_shows_in_the_stylesheet(client, monkeypatch) -> None:
    css = client.get("/ui/colours.css").content.decode()
    assert f".state-down{{--c:{Hue.RED};" in css and f"--state-down:{Hue.RED};" in css
    assert f".cause-planned{{--c:{Hue.SLATE};" in css and f"--tone-bad:{Hue.RED};" in css

    changed = {**NodeState.palette(), "down": "#123456"}
    monkeypatch.setattr(NodeState, "palette", classmethod(lambda cls: changed))
    css = client.get("/ui/colours.css").content.decode()
    assert ".state-down{--c:#123456;" in css and "--state-down:#123456;" in css
    assert NodeState.DOWN.colour == "#123456"


def test_a_colour_changed_in_a_palette_shows_in_the_charts(monkeypatch) -> None:
    changed = {**GpuHours.palette(), "downtime": "#123456", "productive": "#abcdef"}
    monkeypatch.setattr(GpuHours, "palette", classmethod(lambda cls: changed))
    trace = waterfall_figure(REPORT)["data"][0]
    assert trace["decreasing"]["marker"]["color"] == "#123456"
    assert trace["totals"]["marker"]["color"] == "#abcdef"
    states = {**NodeState.palette(), "down": "#0000ff"}
    monkeypatch.setattr(NodeState, "palette", classmethod(lambda cls: states))
    heat = availability_heatmap_figure({"heatmap": [], "days": []})["data"][0]
    assert heat["colorscale"][0] == [0, "#0000ff"]


def test_the_stylesheet_declares_every_value_once() -> None:
    css = palette_css()
    names = re.findall(r"^\.([\w-]+)\{--c:", css, re.M)
    assert len(names) == len(set(names)) == sum(len(c) for c in PALETTES.values())


def test_no_palette_colour_is_copied_by_hand() -> None:
    """The stylesheet, the templates and the chart modules name states, never their hex."""
    colours = {c.lower() for choices in PALETTES.values() for c in choices.colour_map().values()}
    css = (ROOT / "static/css/app.css").read_text().lower()
    assert not {c for c in colours if c in css}
    for path in [*(ROOT / "templates").rglob("*.html"), *(ROOT / "apps").rglob("*charts.py")]:
        assert not HEX.findall(path.read_text()), path


def test_loss_causes_are_the_reports_causes_in_order() -> None:
    assert tuple(c.value for c in LOSS_CAUSES) == CAUSES
    assert set(GpuHours.values) == {"productive", *CAUSES}


def test_badge_text_reads_on_every_colour_at_wcag_aa() -> None:
    """Every palette colour gets a badge background and text colour 4.5:1 apart
    (docs/pages.md, Colours: WCAG 2.2 AA) — amber and green take dark text, steel is darkened under
    white."""
    from apps.common.choices import badge_colours, contrast

    for choices in PALETTES.values():
        for colour in choices.colour_map().values():
            background, text = badge_colours(colour)
            assert contrast(background, text) >= 4.5, (choices.__name__, colour)
    assert badge_colours(Hue.AMBER)[1] == "#1b1f24"  # ink on amber, not white at 2.3:1
    assert contrast("#ffffff", "#ffffff") == 1.0 and round(contrast("#000000", "#ffffff")) == 21
