"""Keyboard use in real Chromium (issue 18, item 4): a skip link comes first; the node grid is
one tab stop that arrow keys move through. (axe-core on every page, as every role, light,
dark and on a phone: tests/e2e/test_every_page.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.accounts.services import user_create_or_update
from tests.e2e.support import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
SCAN = """() => axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
  .filter(v => v.impact === 'serious' || v.impact === 'critical')
  .map(v => v.id + ' (' + v.impact + '): '
    + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')))"""


def _axe() -> str:
    if not AXE.exists():
        reason = "axe-core is not installed (make test runs npm ci --prefix tests/e2e)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return AXE.read_text()


def test_skip_link_first_and_the_node_grid_is_one_tab_stop(chromium, live_server):
    call_command("simulate", gpus=64, days=1, seed=8)
    user_create_or_update(username="otto", role="operator", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    sign_in(page, live_server.url, "otto", "pw")
    page.goto(live_server.url + "/?cluster=kuae-sim")
    page.wait_for_selector(".grid a.tile")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.className") == "skip-link"
    assert page.locator(".skip-link").is_visible()
    tiles = page.locator(".grid a.tile")
    assert page.locator(".grid a.tile[tabindex='0']").count() == 1  # one stop for the grid
    assert tiles.count() >= 4
    tiles.first.focus()
    first = tiles.nth(0).get_attribute("href")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("() => document.activeElement.getAttribute('href')") == tiles.nth(
        1
    ).get_attribute("href")
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("() => document.activeElement.getAttribute('href')") == first
    page.keyboard.press("End")
    assert page.evaluate(
        "() => document.activeElement.getAttribute('href')"
    ) == tiles.last.get_attribute("href")
    assert page.locator(".grid a.tile[tabindex='0']").count() == 1
    page.close()
