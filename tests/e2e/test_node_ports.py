"""The node page's Ports card in real Chromium, wide and at 390 px: each port's state with
its word and glyph, the counters that grew, the table scrolling inside its card rather
than the page, and the port charts drawn from KUAE's port rollups (per node, summed over its
ports, saying so). Screenshots go to KUAE_SCREENSHOTS (a folder) when it is set, to be looked at."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.telemetry.models import PortRollup
from apps.telemetry.ports import PortReading
from apps.telemetry.rollup import bucket_of
from apps.telemetry.services import ports_ingest
from tests.e2e.support import sign_in, watch
from tests.e2e.test_every_page import SCAN, _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def setup(db):  # noqa: ANN001, ANN201
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    nodes = nodes_register(
        cluster=cluster, specs=[NodeSpec(hostname=h, rack="r0") for h in ("gpu000", "gpu001")]
    )
    now = timezone.now()
    before, after = now - dt.timedelta(minutes=2), now - dt.timedelta(seconds=40)
    readings = []
    for i in range(4):
        base = {"link_downed": 1, "symbol_error": 120, "port_rcv_errors": 0, "port_xmit_wait": 5000}
        later = dict(base)
        if i == 1:
            later |= {"link_downed": 2, "port_xmit_wait": 98_000}
        if i == 2:
            later |= {"symbol_error": 3}  # reset
        state = "DOWN" if i == 3 else "ACTIVE"
        phys = "Polling" if i == 3 else "LinkUp"
        for at, counters in ((before, base), (after, later)):
            readings.append(
                PortReading(
                    "gpu000",
                    f"mlx5_{i}",
                    1,
                    at,
                    state=state,
                    phys_state=phys,
                    rate_gbps=400.0,
                    counters=counters,
                    switch="leaf-07",
                    switch_port=str(17 + i),
                )  # fmt: skip
            )
    ports_ingest(readings=readings)
    # A day of the node's port rollups: a few symbol errors a bucket, a burst of receive
    # errors and a port down for half an hour six hours ago.
    node = nodes[0]
    first = bucket_of(now - dt.timedelta(hours=23))
    PortRollup.objects.bulk_create(
        PortRollup(
            node=node,
            bucket=first + dt.timedelta(minutes=5 * b),
            ports=4,
            symbol_error=float(30 + (b * 7) % 50),
            port_rcv_errors=900.0 if 200 <= b < 206 else 0.0,
            link_downed=1.0 if b == 200 else 0.0,
            not_active=1 if 200 <= b < 206 else 0,
        )
        for b in range(270)
    )
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)


@pytest.mark.parametrize("width", [1440, 390])
def test_the_ports_card(chromium, live_server, setup, width):  # noqa: ANN001
    axe = _axe()
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    context.route(  # from the app's own origin: the pages' CSP allows only 'self' scripts
        live_server.url + "/__axe.js",
        lambda route: route.fulfill(body=axe, content_type="application/javascript"),
    )
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw")  # waits for the wide header's links
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(live_server.url + "/nodes/gpu000/")
    card = page.locator("section[aria-labelledby=ports-h]")
    rows = card.locator("tbody tr")
    assert rows.count() == 4
    assert "✗ DOWN" in rows.nth(3).inner_text() and "✓ ACTIVE" in rows.nth(0).inner_text()
    assert "link_downed +1" in rows.nth(1).inner_text()
    assert "symbol_error reset, now 3" in rows.nth(2).inner_text()
    # The port charts: eight small charts from the rollups, saying they are per node.
    page.wait_for_selector(".chart-ports.js-plotly-plot")
    assert page.locator(".chart-ports .cartesianlayer > g.subplot").count() == 8
    assert "Per node, summed over its 4 ports" in card.inner_text()
    assert card.locator("nav[aria-label='Port chart range'] a").count() == 5
    # Wide or narrow, the page itself never scrolls sideways: the table does, in its card.
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.add_script_tag(url=live_server.url + "/__axe.js")
    assert page.evaluate(SCAN) == []  # no serious or critical accessibility violation
    shots = os.environ.get("KUAE_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        card.scroll_into_view_if_needed()
        page.screenshot(path=f"{shots}/node-ports-{width}.png")
        card.screenshot(path=f"{shots}/node-ports-card-{width}.png")
    page.goto(live_server.url + "/nodes/gpu001/")
    assert "No fabric telemetry for this node" in page.content()
    seen.assert_clean()
    context.close()
