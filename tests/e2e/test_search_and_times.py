"""The header in real Chromium (issue 18, items 5 and 6): `/` focuses the search box and a
hostname opens its node; the UTC toggle shows times in the browser's zone and is remembered
across a reload."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.accounts.services import user_create_or_update
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.incidents.services import incident_open
from tests.e2e.support import sign_in, watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def setup(db):  # noqa: ANN001, ANN201
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    nodes = nodes_register(
        cluster=cluster, specs=[NodeSpec(hostname=f"gpu{i:03d}", rack="r0") for i in range(4)]
    )
    user_create_or_update(username="otto", role="operator", password="pw", check_password=False)
    detected = dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.UTC)
    return incident_open(
        cluster=cluster,
        title="Hot GPU",
        category="gpu_thermal",
        severity="sev3",
        detected_at=detected,
        nodes=nodes[:1],
        actor="otto",
    )


def test_slash_focuses_the_search_box_and_a_hostname_opens_its_node(chromium, live_server, setup):
    page = chromium.new_page(viewport={"width": 1440, "height": 900})
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "otto", "pw")
    page.goto(live_server.url + "/incidents/")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "site-search"
    assert page.input_value("#site-search") == ""  # the "/" itself is not typed
    page.keyboard.type("gpu002")
    page.keyboard.press("Enter")
    page.wait_for_url("**/nodes/gpu002/")
    # "/" typed into another field stays in it
    page.goto(live_server.url + "/search/?q=gpu00")
    page.click("#search-q")
    page.keyboard.press("End")
    page.keyboard.type("/")
    assert page.input_value("#search-q") == "gpu00/"
    seen.assert_clean()
    page.close()


def test_utc_toggle_shows_local_time_and_is_remembered(chromium, live_server, setup):
    context = chromium.new_context(
        timezone_id="Asia/Shanghai", viewport={"width": 1440, "height": 900}
    )
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "otto", "pw")
    page.goto(live_server.url + "/incidents/")
    when = page.locator('time[datetime^="2026-01-02T03:04"]').first
    toggle = page.locator(".tz-toggle")
    assert when.inner_text() == "01-02 03:04" and toggle.inner_text() == "Times: UTC"
    toggle.click()
    assert when.inner_text() == "01-02 11:04"  # UTC+8
    assert toggle.get_attribute("aria-pressed") == "true" and "UTC+08" in toggle.inner_text()
    page.reload()
    when = page.locator('time[datetime^="2026-01-02T03:04"]').first
    assert when.inner_text() == "01-02 11:04"  # remembered by this browser
    page.locator(".tz-toggle").click()
    assert when.inner_text() == "01-02 03:04"
    page.reload()
    assert page.locator('time[datetime^="2026-01-02T03:04"]').first.inner_text() == "01-02 03:04"
    seen.assert_clean()
    context.close()
