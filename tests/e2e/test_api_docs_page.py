"""The API page in real Chromium: Swagger UI inside the app's frame (header, navigation),
drawn from the app's own files under the page CSP — no console error, no request leaving
the app — for a signed-in reader, and for anyone when the site makes its docs public."""

from __future__ import annotations

import time

import pytest
from django.test import override_settings

from apps.accounts.services import user_create_or_update
from tests.e2e.support import sign_in, watch
from tests.e2e.test_accessibility import SCAN, _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _operations(page) -> int:  # noqa: ANN001 - a Playwright page
    """How many operations Swagger UI lists once it has read the schema (polled: the page
    CSP forbids wait_for_function's string scripts)."""
    for _ in range(150):
        count = page.locator("#swagger-ui .opblock").count()
        if count:
            return count
        time.sleep(0.1)
    return 0


def test_a_reader_sees_swagger_ui_in_the_app_frame(chromium, live_server):
    axe = _axe()
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)
    for scheme in ("light", "dark"):
        context = chromium.new_context(viewport={"width": 1400, "height": 900}, color_scheme=scheme)
        context.route(  # axe-core from the app's origin: the page CSP allows only 'self'
            live_server.url + "/__axe.js",
            lambda route: route.fulfill(body=axe, content_type="application/javascript"),
        )
        page = context.new_page()
        seen = watch(page, live_server.url)
        sign_in(page, live_server.url, "mia", "pw")
        page.click("header >> text=API")
        assert _operations(page) > 20
        assert page.locator("header.top nav >> text=Overview").is_visible()  # the app's header
        assert page.locator("header.top a[aria-current=page]").inner_text() == "API"
        assert page.locator("header.top .who").inner_text().startswith("mia")
        assert page.locator("#swagger-ui").get_by_text("/api/v1/clusters/").first.is_visible()
        # The card stays light in the dark theme: swagger-ui's own text is dark on white.
        card = page.locator(".card.api-docs")
        assert card.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 255, 255)"
        page.add_script_tag(url=live_server.url + "/__axe.js")
        assert page.evaluate(SCAN) == []  # no serious or critical WCAG violation
        page.locator("#swagger-ui .opblock-summary").first.click()  # an operation opens
        page.wait_for_selector("#swagger-ui .opblock.is-open")
        seen.assert_clean()
        context.close()


@override_settings(KUAE_PUBLIC_DOCS=True)
def test_public_docs_for_someone_not_signed_in(chromium, live_server):
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    seen = watch(page, live_server.url)
    page.goto(live_server.url + "/api/docs/")
    assert page.url.endswith("/api/docs/")  # not sent to the sign-in page
    assert _operations(page) > 20
    assert page.locator("header.top nav >> text=Overview").is_visible()
    sign_in_link = page.locator("header.top a.sign-in")
    assert sign_in_link.inner_text() == "Sign in"
    assert page.locator("header.top >> text=Sign out").count() == 0
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: nothing scrolls sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= 391
    assert not sign_in_link.is_visible()  # in the menu, as the user menu is
    page.click("header.top .menu-toggle")
    sign_in_link.click()
    page.wait_for_selector("#id_username")
    assert "/login/?next=/api/docs/" in page.url
    seen.assert_clean()
    context.close()
