"""The cluster switch in real Chromium, wide and at 390 px (docs/pages.md, The cluster a page
shows): a page without a choice opens on the largest cluster; a cluster chosen on the
overview is the one the weekly report and reliability open on. Screenshots go to
KUAE_SCREENSHOTS (a folder) when it is set, to be looked at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from apps.accounts.services import user_create_or_update
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from tests.e2e.support import sign_in, watch
from tests.e2e.test_every_page import SCAN, _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def setup(db):  # noqa: ANN001, ANN201
    """kuae-mtt, 64 GPUs and first by name; kuae-sim, 256 GPUs; a manager."""
    for name, n in (("kuae-mtt", 8), ("kuae-sim", 32)):
        cluster = cluster_create(
            name=name, gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
        )
        nodes_register(
            cluster=cluster,
            specs=[NodeSpec(hostname=f"{name}-{i:02d}", rack=f"r{i // 8}") for i in range(n)],
        )
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)


@pytest.mark.parametrize("width", [1440, 390])
def test_a_cluster_chosen_is_kept(chromium, live_server, setup, width):  # noqa: ANN001
    axe = _axe()
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    context.route(
        live_server.url + "/__axe.js",
        lambda route: route.fulfill(body=axe, content_type="application/javascript"),
    )
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw")
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(live_server.url + "/")
    assert page.locator("h1").inner_text() == "kuae-sim"  # the largest, not the first by name
    switch = page.get_by_label("Cluster", exact=True)
    assert switch.input_value() == "kuae-sim"
    with page.expect_navigation():
        switch.select_option("kuae-mtt")
    assert "cluster=kuae-mtt" in page.url
    assert page.locator("h1").inner_text() == "kuae-mtt"
    shots = os.environ.get("KUAE_SCREENSHOTS")
    for path, title in (("/reports/weekly/", "Weekly report · kuae-mtt"), ("/reliability/", "")):
        page.goto(live_server.url + path)
        assert "kuae-mtt" in page.locator("h1").inner_text(), path
        if title:
            assert page.locator("h1").inner_text().startswith(title)
        assert page.get_by_label("Cluster", exact=True).input_value() == "kuae-mtt"
        assert page.evaluate("document.documentElement.scrollWidth") <= width, path
        page.add_script_tag(url=live_server.url + "/__axe.js")
        assert page.evaluate(SCAN) == [], path
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            name = path.strip("/").replace("/", "-")
            page.screenshot(path=f"{shots}/cluster-switch-{name}-{width}.png", full_page=True)
    seen.assert_clean()
    context.close()
