"""Screen sizes an operator's walk found wanting (issue 32), in real Chromium: the header fits
every role at 1280 and 1440 px; a manager lands on the weekly report and reads it on a 390-px
phone; `?kiosk=1` fills a 2560-px wall screen (docs/pages.md, Every screen size)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from apps.accounts.services import user_create_or_update
from apps.fleet.models import Cluster
from apps.jobs.models import Job
from tests.e2e.support import sign_in, watch
from tests.support import simulate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/layout-shots")
WIDE = "() => [document.documentElement.scrollWidth, window.innerWidth]"

HEADER = """() => {
  const h = document.querySelector('header.top');
  const out = document.querySelector('.who button').getBoundingClientRect();
  const q = document.querySelector('#site-search').getBoundingClientRect();
  return {scroll: h.scrollWidth, client: h.clientWidth, outLeft: out.left, outRight: out.right,
          outTop: out.top, outBottom: out.bottom, outW: out.width, search: q.width,
          vw: window.innerWidth};
}"""


def shot(page, name: str) -> None:  # noqa: ANN001
    """A screenshot to look at (not asserted on)."""
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


@pytest.mark.parametrize("role", ["manager", "operator", "engineer", "admin"])
def test_the_header_fits_every_role_at_1280_and_1440(chromium, live_server, role):
    call_command("simulate", gpus=8, days=1, seed=3)
    # the demo's logins: names as long as a real person's
    user_create_or_update(username=f"demo-{role}", role=role, password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1440, "height": 900})
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, f"demo-{role}", "pw")
    for width, local in ((1440, False), (1280, False), (1280, True)):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(live_server.url + "/nodes/")
        if local:  # times in the browser's zone: the toggle's label is longer
            page.click(".tz-toggle")
        shot(page, f"header-{role}-{width}{'-local' if local else ''}")
        m = page.evaluate(HEADER)
        assert m["scroll"] <= m["client"], (width, m)
        assert m["outLeft"] >= 0 and m["outRight"] <= m["vw"] and m["outW"] > 0, (width, m)
        assert m["outTop"] >= 0 and m["outBottom"] <= 60, (width, m)
        assert m["search"] >= 160, (width, m)
        # every section stays reachable: each nav link is shown, or behind the More menu
        hidden = page.evaluate(
            """() => [...document.querySelectorAll('#main-nav a')]
                 .filter(a => !a.getClientRects().length).map(a => a.textContent)"""
        )
        if hidden:
            page.click(".nav-more-toggle")
            for label in hidden:
                assert page.locator(f"#main-nav a:text-is('{label}')").is_visible(), label
            page.keyboard.press("Escape")
    # on a phone every entry is in the folded menu, API and Admin with the rest
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(live_server.url + "/nodes/")
    page.click(".menu-toggle")
    shot(page, f"header-{role}-390-menu")
    labels = page.evaluate(
        "() => [...document.querySelectorAll('#main-nav a')].map(a => a.textContent)"
    )
    for label in labels:
        assert page.locator(f"#main-nav a:text-is('{label}')").is_visible(), label
    assert ("Admin" in labels) == (role == "admin") and "API" in labels
    seen.assert_clean()
    page.close()


OVERLAPS = """sel => {
  const boxes = [...document.querySelectorAll(sel)].map(e => e.getBoundingClientRect())
    .filter(r => r.width && r.height);
  const hits = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    const meet = a.left < b.right - 1 && b.left < a.right - 1
      && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    if (meet) hits.push([i, j]);
  }
  return [boxes.length, hits];
}"""

# The charts whose toolbar (Plotly's modebar) lies over their legend, by number.
LEGEND_UNDER_TOOLBAR = """() => [...document.querySelectorAll('.js-plotly-plot')]
.flatMap((c, n) => {
  const bar = c.querySelector('.modebar'), legend = c.querySelector('.legend');
  if (!bar || !legend) return [];
  const a = bar.getBoundingClientRect(), b = legend.getBoundingClientRect();
  const shown = getComputedStyle(bar).display !== 'none' && a.width > 0;
  const meet = a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  return shown && meet ? [n] : [];
})"""


def test_a_manager_reads_the_weekly_report_on_a_phone(chromium, live_server):
    simulate(gpus=64, days=14, seed=5, failure_rate=0.05)
    Cluster.objects.update(
        automation_paused=True,
        automation_by="otto",
        automation_reason="the storage migration: nodes flap while the filers move",
    )
    # a name as long as real ones get: it may not push the lost GPU·h out of sight
    costliest = Job.objects.order_by("-gpu_count", "pk").first()
    costliest.name = "llama-405b-pretrain-continued-from-step-120000-long-context-ablation"
    costliest.save(update_fields=["name"])
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1280, "height": 844})
    seen = watch(page, live_server.url)
    # a manager signing in with no `next` lands on the weekly report
    page.goto(live_server.url + "/login/")
    page.fill("#id_username", "mia")
    page.fill("#id_password", "pw")
    page.click(".login button[type=submit]")  # not the header's language switch
    page.wait_for_selector("text=Where the GPU-hours went")
    assert page.url.split("?")[0].endswith("/reports/weekly/")

    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.chart')].every(c => c.querySelector('.main-svg'))",
        timeout=20_000,
    )
    shot(page, "phone-weekly-top")
    # the automation-pause banner is compact: a few lines, not a quarter of the screen
    banner = page.locator(".banner.paused").bounding_box()
    assert banner and banner["height"] <= 844 * 0.1, banner
    # the waterfall's labels (tick labels, figures over the bars) do not run into each other
    waterfall = '[data-figure-json="waterfall-data"]'
    page.locator(waterfall).scroll_into_view_if_needed()
    shot(page, "phone-weekly-waterfall")
    # (the axes' labels, among them the six steps' names; the figures by the bars)
    for part in (".xtick text, .ytick text", ".waterfalllayer text"):
        sel = ", ".join(f"{waterfall} {p}" for p in part.split(", "))
        count, hits = page.evaluate(OVERLAPS, sel)
        assert count >= 6 and not hits, (part, count, hits)
    # no chart's toolbar lies over its legend
    page.locator("#eff-h").scroll_into_view_if_needed()
    shot(page, "phone-weekly-effective")
    assert page.evaluate(LEGEND_UNDER_TOOLBAR) == []
    # the jobs table shows each job's name and its lost GPU·h without scrolling sideways
    page.locator("#jobs-h").scroll_into_view_if_needed()
    shot(page, "phone-weekly-jobs")
    card = page.locator("section[aria-labelledby=jobs-h]").bounding_box()
    for heading in ("Job", "Lost"):
        box = page.locator(f"section[aria-labelledby=jobs-h] th:has-text('{heading}')").first
        b = box.bounding_box()
        assert b and b["x"] >= card["x"] and b["x"] + b["width"] <= card["x"] + card["width"], (
            heading,
            b,
            card,
        )
    # the incidents behind the lost hours: each one's lost GPU·h (this week's and the whole
    # incident's) in view, with its number and title, and nothing in the card scrolls sideways
    page.evaluate("() => document.getElementById('inc-h').scrollIntoView()")
    shot(page, "phone-weekly-incidents")
    cells = page.evaluate(INCIDENT_CELLS)
    assert cells["rows"] >= 1 and cells["card_scroll"] <= cells["card_client"], cells
    assert not cells["outside"], cells
    seen.assert_clean()
    page.close()


# Every cell of the weekly incidents table that carries a lost GPU·h figure (and the
# incident's number and title): its box lies within the viewport and the card.
INCIDENT_CELLS = """() => {
  const card = document.querySelector('section[aria-labelledby=inc-h]');
  const c = card.getBoundingClientRect(), vw = window.innerWidth;
  const rows = [...card.querySelectorAll('tbody tr')].filter(r => !r.querySelector('.empty'));
  const outside = [];
  for (const row of rows) {
    // the number, the title, this week's lost GPU·h and the incident's whole cost
    const cells = [1, 3, 5, 6].map(n => row.querySelector(`td:nth-child(${n})`));
    for (const cell of cells) {
      if (!cell) { outside.push(['missing']); continue; }
      const b = cell.getBoundingClientRect();
      const shown = b.width > 0 && getComputedStyle(cell).visibility !== 'hidden';
      if (!shown || b.left < Math.max(0, c.left) - 0.5 || b.right > Math.min(vw, c.right) + 0.5)
        outside.push([cell.className, cell.textContent.trim().slice(0, 40), b.left, b.right]);
    }
  }
  return {rows: rows.length, outside, card_scroll: card.scrollWidth, card_client: card.clientWidth};
}"""


def test_the_weekly_incidents_table_keeps_its_columns_on_a_wide_screen(chromium, live_server):
    """At 1440 px the incidents table is a table: a header row and six columns."""
    simulate(gpus=64, days=14, seed=5, failure_rate=0.05)
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1440, "height": 900})
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw")
    page.goto(live_server.url + "/reports/weekly/")
    page.evaluate("() => document.getElementById('inc-h').scrollIntoView()")
    shot(page, "wide-weekly-incidents")
    head = page.locator("section[aria-labelledby=inc-h] thead")
    assert head.is_visible() and head.locator("th").count() == 6
    assert "Lost GPU·h this week" in head.inner_text()
    cells = page.evaluate(INCIDENT_CELLS)
    assert cells["rows"] >= 1 and not cells["outside"], cells
    # Measured in one go, against the row: a chart above that finishes drawing between
    # two separate reads moves the whole table (CI once saw tops of 500 and 560).
    tops = page.evaluate(
        """() => {
          const row = document.querySelector('section[aria-labelledby=inc-h] tbody tr');
          const top = row.getBoundingClientRect().top;
          const cells = [...row.querySelectorAll('td')];
          return cells.map(td => Math.round(td.getBoundingClientRect().top - top));
        }"""
    )
    assert len(tops) == 6 and set(tops) == {0}, tops  # one line per incident, not stacked
    seen.assert_clean()
    page.close()


KIOSK = """() => {
  const main = document.querySelector('main');
  const rows = [...main.querySelectorAll('.kpis, .card, .rack')]
    .map(e => e.getBoundingClientRect()).filter(r => r.width && r.height);
  const racks = [...main.querySelectorAll('.grid .rack')].map(e => e.getBoundingClientRect());
  const tile = document.querySelector('.grid .tile').getBoundingClientRect();
  return {
    vw: window.innerWidth,
    left: Math.min(...rows.map(r => r.left)), right: Math.max(...rows.map(r => r.right)),
    rackRight: Math.max(...racks.map(r => r.right)), rackLeft: Math.min(...racks.map(r => r.left)),
    font: parseFloat(getComputedStyle(document.body).fontSize),
    cell: parseFloat(getComputedStyle(document.querySelector('td')).fontSize),
    tile: Math.min(tile.width, tile.height),
    scroll: document.documentElement.scrollWidth,
  };
}"""


def test_kiosk_fills_a_2560_px_wall_screen(chromium, live_server):
    simulate(gpus=512, days=2, seed=7, failure_rate=0.05)
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1920, "height": 1080})
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw")
    page.set_viewport_size({"width": 2560, "height": 1440})
    page.goto(live_server.url + "/?kiosk=1")
    page.wait_for_selector(".grid .tile")
    page.wait_for_timeout(500)
    shot(page, "kiosk-2560")
    m = page.evaluate(KIOSK)
    # the content spans the wall, the node grid with it; no page scrolls sideways
    assert m["right"] - m["left"] >= 0.9 * m["vw"], m
    assert m["rackRight"] - m["rackLeft"] >= 0.9 * m["vw"], m
    assert m["scroll"] <= m["vw"], m
    # type and tiles read from across the room
    assert m["font"] >= 20 and m["cell"] >= 20, m
    assert m["tile"] >= 24, m
    seen.assert_clean()
    page.close()
