"""The admin inside the app's frame (issue 42), in real Chromium at a laptop's and a phone's
width: the app's header above the admin's index and user form, the role near the top of the
form, no page scrolling sideways. Set KUAE_SHOTS to a folder to keep the screenshots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from apps.accounts.services import user_create_or_update
from tests.e2e.support import watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDE = "() => [document.documentElement.scrollWidth, window.innerWidth]"


@pytest.mark.parametrize("width", [1440, 390])
def test_the_admin_wears_the_apps_header(chromium, live_server, tmp_path, width: int):  # noqa: ANN001
    root = user_create_or_update(username="root", role="admin", password="pw", check_password=False)
    mia = user_create_or_update(username="mia", role="manager", password="pw", check_password=False)
    shots = Path(os.environ.get("KUAE_SHOTS") or tmp_path)
    page = chromium.new_page(viewport={"width": width, "height": 900})
    seen = watch(page, live_server.url)
    page.goto(live_server.url + "/login/")
    page.fill("#id_username", root.username)
    page.fill("#id_password", "pw")
    page.click(".login button[type=submit]")  # not the header's language switch
    page.wait_for_selector("main")
    page.goto(live_server.url + "/admin/")
    assert page.locator("header.top .brand").get_attribute("href") == "/"
    assert page.locator("#site-name").inner_text() == "KUAE Ops admin"
    assert page.locator("text=GPUs").first.is_visible()
    page.screenshot(path=str(shots / f"admin-index-{width}.png"), full_page=True)
    assert page.evaluate(WIDE)[0] <= width  # nothing scrolls sideways
    page.goto(live_server.url + f"/admin/accounts/user/{mia.pk}/change/")
    role = page.locator("#id_role").bounding_box()
    password = page.locator("h2:text-is('Password')").bounding_box()
    assert role is not None and password is not None and role["y"] < password["y"]
    page.screenshot(path=str(shots / f"admin-user-{width}.png"), full_page=True)
    assert page.evaluate(WIDE)[0] <= width
    seen.assert_clean()
    page.close()
