"""Phones and wall screens (issue 18, item 2), in real Chromium: at 390 px the menu folds
behind a button (no page scrolls sideways: tests/e2e/test_every_page.py); `?kiosk=1` shows
no chrome and says when its data has gone stale."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from apps.accounts.services import user_create_or_update
from tests.e2e.support import sign_in, watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDE = "() => [document.documentElement.scrollWidth, window.innerWidth]"


def test_the_menu_folds_behind_a_button_on_a_phone(chromium, live_server):
    call_command("simulate", gpus=16, days=1, seed=5)
    user_create_or_update(username="otto", role="operator", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 390, "height": 844})
    seen = watch(page, live_server.url)
    sign_in_phone(page, live_server.url)
    page.goto(live_server.url + "/nodes/")
    assert not page.locator("#main-nav").is_visible()
    page.click(".menu-toggle")
    assert page.locator("#main-nav >> text=Incidents").is_visible()
    assert page.locator(".menu-toggle").get_attribute("aria-expanded") == "true"
    seen.assert_clean()
    page.close()


def sign_in_phone(page, base: str) -> None:  # noqa: ANN001
    """Sign in; on a phone the nav is folded, so wait for the page body instead."""
    page.goto(base + "/login/")
    page.fill("#id_username", "otto")
    page.fill("#id_password", "pw")
    page.click(".login button[type=submit]")  # not the header's language switch
    page.wait_for_selector("main")


def test_kiosk_has_no_chrome_and_says_when_data_is_stale(chromium, live_server):
    call_command("simulate", gpus=32, days=1, seed=6)
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1920, "height": 1080})
    # The page's own clock, which the test moves on instead of waiting the periods out: it
    # runs in real time until then, and the page's timers fire as it passes.
    page.clock.install()
    sign_in(page, live_server.url, "mia", "pw")
    page.goto(live_server.url + "/?kiosk=1")
    page.wait_for_selector(".kpis")
    assert not page.locator("header.top").is_visible()
    assert page.evaluate("() => getComputedStyle(document.body).fontSize") == "18px"
    assert not page.locator(".stale-note").is_visible()
    # the network goes away: the panels stop refreshing (every 20 s), and once the data is
    # older than two periods (+5 s) it says so — not after one
    # (no request of the page's own still in flight: one answered after this would count
    # as fresh data on a loaded machine)
    page.wait_for_load_state("networkidle")
    page.route("**/*", lambda route: route.abort())
    page.clock.run_for(20_000)
    assert not page.locator(".stale-note").is_visible()
    page.clock.run_for(30_000)
    page.locator(".stale-note").wait_for(state="visible", timeout=5_000)
    assert "No fresh data for" in page.locator(".stale-note").inner_text()
    page.close()
