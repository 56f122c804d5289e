"""The topology page's switches by their NIC ports' health in real Chromium, wide and at
390 px: each switch's ports counted by the fabric check's verdict with glyphs and words, its
name marked by the worst, failing switches first, and the page never scrolling sideways.
Screenshots go to KUAE_SCREENSHOTS (a folder) when it is set, to be looked at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.choices import NodeState
from apps.fleet.models import Node
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.health.detectors.fabric import port_target
from apps.health.models import CheckResult
from apps.telemetry.models import Port
from tests.e2e.support import sign_in, watch
from tests.e2e.test_every_page import SCAN, _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def setup(db):  # noqa: ANN001, ANN201
    """Four leaf switches of 8 nodes × 8 ports (rail-optimised: port p of every node on
    rail switch `rail-p` too would be 8 more; here each node's ports go to its leaf), with
    one failing port on leaf-02, warnings on leaf-01, leaf-03 not judged yet."""
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    nodes = nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(hostname=f"gpu-{s}{i:02d}", rack=f"r{s}", switch=f"leaf-{s:02d}")
            for s in range(4)
            for i in range(8)
        ],
    )
    now = timezone.now()
    Port.objects.bulk_create(
        Port(node=n, device=f"mlx5_{p}", port=1, state="ACTIVE", ts=now)
        for n in nodes
        for p in range(8)
    )
    Node.objects.filter(hostname="gpu-200").update(state=NodeState.DRAINED)
    results = []
    for n in nodes:
        if n.switch == "leaf-03":
            continue
        for p in range(8):
            status = "pass"
            if n.hostname == "gpu-200" and p == 3:
                status = "fail"
            elif n.hostname in ("gpu-101", "gpu-105") and p == 0:
                status = "warn"
            results.append(
                CheckResult(
                    cluster=cluster,
                    kind="fabric",
                    target=port_target(n.hostname, f"mlx5_{p}/1"),
                    node=n,
                    status=status,
                    at=now,
                    since=now,
                    details={"switch": n.switch},
                )
            )
    CheckResult.objects.bulk_create(results)
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)


@pytest.mark.parametrize("width", [1440, 390])
def test_switches_by_port_health(chromium, live_server, setup, width):  # noqa: ANN001
    axe = _axe()
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    # axe is served from the app's own origin: the pages' CSP allows only 'self' scripts
    context.route(
        live_server.url + "/__axe.js",
        lambda route: route.fulfill(body=axe, content_type="application/javascript"),
    )
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw")
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(live_server.url + "/topology/?cluster=c1")
    # the switches with nothing wrong (leaf-00's ports pass, leaf-03's not judged yet) wait
    # in one closed line, drawn when it is opened (docs/pages.md, Node grids)
    page.locator("details[data-quiet='quiet-switch'] summary").click()
    # the line is drawn on its toggle event, after the click returns (one task: once it is
    # marked drawn, every row is there)
    page.wait_for_selector("details[data-quiet='quiet-switch'][data-drawn]", state="attached")
    rows = page.locator("section[aria-labelledby='switch-h'] [data-component]")
    order = [rows.nth(i).get_attribute("data-component") for i in range(rows.count())]
    assert order == ["switch:leaf-02", "switch:leaf-01", "switch:leaf-00", "switch:leaf-03"]
    leaf02 = page.locator('[data-component="switch:leaf-02"] .ports-summary').inner_text()
    assert leaf02.startswith("· 64 ports:") and "✗ 1 fail" in leaf02 and "✓ 63 pass" in leaf02
    leaf03 = page.locator('[data-component="switch:leaf-03"] .ports-summary').inner_text()
    assert "· 64 not judged yet" in leaf03
    # the worst verdict colours the switch's name: red for a failing port
    mark = page.locator('[data-component="switch:leaf-02"] .port-worst')
    colour = mark.evaluate("e => getComputedStyle(e).borderLeftColor")
    unjudged = page.locator('[data-component="switch:leaf-03"] .port-worst').evaluate(
        "e => getComputedStyle(e).borderLeftColor"
    )
    assert colour != unjudged
    # the fail badge leads to the port and its node, and on to the node's Ports card
    page.locator('[data-component="switch:leaf-02"] a[href="#ports-switch:leaf-02"]').click()
    named = page.locator('[id="ports-switch:leaf-02"] li').first
    assert "fail" in named.inner_text() and "mlx5_3/1 of gpu-200" in named.inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.add_script_tag(url=live_server.url + "/__axe.js")
    assert page.evaluate(SCAN) == []  # no serious or critical accessibility violation
    shots = os.environ.get("KUAE_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{shots}/topology-ports-{width}.png", full_page=True)
    named.get_by_role("link").click()
    page.wait_for_url("**/nodes/gpu-200/#port-mlx5_3-1")
    assert page.locator('[id="port-mlx5_3-1"]').is_visible()
    seen.assert_clean()
    context.close()
