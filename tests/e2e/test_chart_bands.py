"""Report charts in real Chromium at 390, 1440 and 2560 px (issue 42, layout): the toolbar
never covers the trends range buttons, the Causes chart's two panels never overlap, the
node × day heat map is as tall as its rows (no blank floor), and the checkpoint chart's
legend never runs into its job names. Screenshots to look at go to /tmp/chart-bands."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.accounts.services import user_create_or_update
from tests.e2e.support import watch
from tests.e2e.test_chart_layout import TEXTS, drawn, overlaps, sign_in_anywhere
from tests.support import simulate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/chart-bands")
BOX = """(el) => { const r = el.getBoundingClientRect();
  return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; }"""


def _meet(a: dict, b: dict) -> bool:
    return min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > 1 and (
        min(a["y1"], b["y1"]) - max(a["y0"], b["y0"]) > 1
    )


def test_toolbar_buttons_panels_and_legends_keep_apart(chromium, live_server) -> None:
    simulate(gpus=64, days=20, seed=2, failure_rate=0.03)
    user_create_or_update(username="mia", role="manager", password="pw-mia", check_password=False)
    SHOTS.mkdir(exist_ok=True)
    for width in (390, 1440, 2560):
        context = chromium.new_context(viewport={"width": width, "height": 1000})
        page = context.new_page()
        seen = watch(page, live_server.url)
        sign_in_anywhere(page, live_server.url)
        kiosk = "&kiosk=1" if width == 2560 else ""
        page.goto(f"{live_server.url}/reports/trends/?cluster=kuae-sim{kiosk}")
        for chart in ("[data-figure*='/mfu.json']", "[data-figure*='/availability.json']"):
            drawn(page, chart)
            page.hover(f"{chart} .main-svg")  # the toolbar shows while the pointer is on it
            bar = page.locator(f"{chart} .modebar").evaluate(BOX)
            buttons = page.locator(f"{chart} .rangeselector").evaluate(BOX)
            assert not _meet(bar, buttons), (width, chart, bar, buttons)
            plot = page.locator(f"{chart} .nsewdrag").first.evaluate(BOX)
            assert bar["y1"] <= plot["y0"] + 1, (width, chart, bar, plot)  # over no line
        heat = "[data-figure*=heatmap]"
        drawn(page, heat)
        svg = page.locator(f"{heat} .main-svg").first.evaluate(BOX)
        box = page.locator(heat).evaluate(BOX)
        assert box["y1"] - box["y0"] <= svg["y1"] - svg["y0"] + 8, (width, box, svg)
        ck = "[data-figure*=checkpoints]"
        drawn(page, ck)
        texts = page.locator(ck).evaluate(TEXTS)
        assert not overlaps(texts), (width, overlaps(texts))
        page.screenshot(path=str(SHOTS / f"trends-{width}.png"), full_page=True)

        page.goto(f"{live_server.url}/reliability/?cluster=kuae-sim{kiosk}")
        causes = "[data-figure-json=pareto-data]"
        drawn(page, causes)
        count = page.locator(f"{causes} .draglayer .xy .nsewdrag").first.evaluate(BOX)
        cost = page.locator(f"{causes} .draglayer .x2y3 .nsewdrag").first.evaluate(BOX)
        assert count["y1"] < cost["y0"], (width, count, cost)
        texts = page.locator(causes).evaluate(TEXTS)
        # slanted names' upright boxes meet their neighbours'; titles meet nothing
        titles = {"interruptions", "cumulative share", "lost GPU-hours"}
        titles |= {"by count, with the cumulative share", "by lost GPU-hours"}
        crossed = [pair for pair in overlaps(texts) if titles & set(pair)]
        assert len(texts) > 10 and not crossed, (width, crossed)
        page.screenshot(path=str(SHOTS / f"reliability-{width}.png"), full_page=True)
        context.close()
        seen.assert_clean()
