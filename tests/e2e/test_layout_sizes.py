"""Screen sizes an operator's walk found wanting (issue 32), in real Chromium: the header fits
every role at 1280 and 1440 px; the weekly report reads on a 390-px phone; `?kiosk=1` fills a
2560-px wall screen (docs/pages.md, Every screen size)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from apps.accounts.services import user_create_or_update
from tests.e2e.support import sign_in, watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/layout-shots")

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
    seen.assert_clean()
    page.close()
