"""The wall screen's overview (issue 42): at 2560 × 1440 and 1920 × 1080 it fits the screen
with the latest incidents in view (nobody scrolls a wall), its racks sit in balanced rows (no
rack wraps alone), and a node whose check warns is marked by a ring that stands out from its
tile (WCAG non-text contrast, 3:1) — docs/pages.md, Every screen size."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from apps.accounts.services import user_create_or_update
from apps.common.choices import contrast
from apps.fleet.choices import NodeState
from tests.e2e.support import sign_in, watch
from tests.support import simulate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/layout-shots")

FIT = """() => {
  const racks = [...document.querySelectorAll('.grid .rack')].map(r => r.getBoundingClientRect());
  const rows = {};
  for (const r of racks) rows[Math.round(r.top)] = (rows[Math.round(r.top)] || 0) + 1;
  const inc = document.querySelector('section[aria-labelledby=inc-h]');
  const head = inc.querySelector('#inc-h').getBoundingClientRect();
  const first = inc.querySelector('tbody tr').getBoundingClientRect();
  const card = inc.getBoundingClientRect();
  const tile = document.querySelector('.grid .tile').getBoundingClientRect();
  return {
    vh: window.innerHeight, vw: window.innerWidth,
    height: document.documentElement.scrollHeight, width: document.documentElement.scrollWidth,
    rows: Object.keys(rows).map(Number).sort((a, b) => a - b).map(k => rows[k]),
    incHead: head.bottom, incRow: first.bottom, incCard: card.bottom,
    incRows: inc.querySelectorAll('tbody tr').length,
    tile: Math.min(tile.width, tile.height),
  };
}"""


def shot(page, name: str) -> None:  # noqa: ANN001
    """A screenshot to look at (not asserted on)."""
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def test_the_kiosk_overview_fits_the_wall_with_its_incidents_in_view(chromium, live_server):
    # the demo's 1,024 GPUs: eight racks of sixteen nodes, a dozen incidents
    simulate(gpus=1024, days=2, seed=7, failure_rate=0.05)
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 2560, "height": 1440})
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw")
    for width, height in ((2560, 1440), (1920, 1080)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(live_server.url + "/?kiosk=1")
        page.wait_for_selector(".grid .tile")
        page.wait_for_timeout(300)
        shot(page, f"kiosk-fit-{width}")
        m = page.evaluate(FIT)
        # the page is the screen: nothing below it, nothing beside it
        assert m["height"] <= m["vh"] and m["width"] <= m["vw"], m
        # the latest incidents are on it, their heading and at least their newest row (inside
        # their card, which cuts off the rows it has no room for)
        assert m["incCard"] <= m["vh"] and m["incRows"] >= 2, m
        assert m["incHead"] <= m["incCard"] and m["incRow"] <= m["incCard"], m
        # eight racks in balanced rows: none alone on a row, no row fuller than the first
        rows = m["rows"]
        assert sum(rows) == 8 and len(rows) > 1 and min(rows) >= 2, m
        assert max(rows) == rows[0] and 2 * rows[-1] >= rows[0], m
        # tiles still read from across the room
        assert m["tile"] >= 24, m
    seen.assert_clean()
    page.close()


RINGS = """(states) => {
  const grid = document.querySelector('.grid');
  return states.map(state => {
    const t = document.createElement('span');
    t.className = `tile state-${state} busy worst-warn`;
    grid.appendChild(t);
    const s = getComputedStyle(t);
    const out = {state, background: s.backgroundColor, shadow: s.boxShadow, opacity: s.opacity};
    t.remove();
    return out;
  });
}"""


def rings(shadow: str) -> list[tuple[float, str]]:
    """`box-shadow`'s inset rings as (spread px, colour hex), innermost (widest) last."""
    found = []
    for r, g, b, spread in re.findall(
        r"rgb\((\d+), (\d+), (\d+)\) 0px 0px 0px ([\d.]+)px inset", shadow
    ):
        found.append((float(spread), f"#{int(r):02x}{int(g):02x}{int(b):02x}"))
    return sorted(found)


def hex_of(rgb: str) -> str:
    r, g, b = (int(x) for x in re.findall(r"\d+", rgb)[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


@pytest.mark.parametrize("kiosk", [False, True])
def test_the_warn_ring_stands_out_from_every_tile(chromium, live_server, kiosk):
    simulate(gpus=64, days=1, seed=3)
    user_create_or_update(username="otto", role="operator", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 2560 if kiosk else 1440, "height": 1440})
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "otto", "pw")
    page.goto(live_server.url + "/health/" + ("?kiosk=1" if kiosk else ""))
    page.wait_for_selector(".grid .tile")
    legend = page.locator("#live-legend .tile.worst-warn")
    legend.scroll_into_view_if_needed()
    shot(page, f"health-warn-{'kiosk' if kiosk else '1440'}")
    for tile in page.evaluate(RINGS, [s.value for s in NodeState]):
        assert tile["opacity"] == "1", tile
        ring = rings(tile["shadow"])
        assert ring, tile
        # the ring that meets the tile's colour (the widest inset one) stands out from it
        spread, colour = ring[-1]
        assert contrast(colour, hex_of(tile["background"])) >= 3, (tile, colour)
        assert ring[0][0] >= 2, tile  # and is thick enough to see
    seen.assert_clean()
    page.close()
