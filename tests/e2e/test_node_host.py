"""The node page's Host card in real Chromium, wide and at 390 px: memory controllers,
mounts (the cluster's required mounts first, each with its state), PCIe links and the
clock, each flag in words as well as colour, a kind never reported said so; the page never
scrolls sideways and axe-core finds nothing serious. Screenshots go to KUAE_SCREENSHOTS (a
folder) when it is set, to be looked at."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.telemetry.host import HostReadingIn
from apps.telemetry.services import host_ingest
from tests.e2e.support import sign_in, watch
from tests.e2e.test_every_page import SCAN, _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIB = 2**40


@pytest.fixture
def setup(db):  # noqa: ANN001, ANN201
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    cluster.required_mounts = ["/checkpoints", "/scratch"]
    cluster.save(update_fields=["required_mounts"])
    nodes_register(
        cluster=cluster, specs=[NodeSpec(hostname=h, rack="r0") for h in ("gpu000", "gpu001")]
    )
    now = timezone.now()
    before, after = now - dt.timedelta(minutes=2), now - dt.timedelta(seconds=40)

    def at(when: dt.datetime, kind: str, subject: str, **values: object) -> HostReadingIn:
        return HostReadingIn("gpu000", kind, subject, when, dict(values))

    disk = {"device": "nas01:/export/checkpoints", "fstype": "nfs4", "device_error": 0,
            "size_bytes": 400 * TIB, "avail_bytes": 12 * TIB}  # fmt: skip
    link = {"link_speed_gts": 32, "max_link_speed_gts": 32, "max_link_width": 16,
            "aer_correctable_total": 0, "aer_nonfatal_total": 0, "aer_fatal_total": 0}  # fmt: skip
    host_ingest(
        readings=[
            at(before, "memory", "mc0", ce_total=10, ue_total=0),
            at(after, "memory", "mc0", ce_total=14, ue_total=1),
            at(after, "memory", "mc1", ce_total=0, ue_total=0),
            at(after, "filesystem", "/checkpoints", readonly=1, **disk),
            at(
                after,
                "filesystem",
                "/",
                device="/dev/nvme0n1p2",
                fstype="ext4",
                readonly=0,
                device_error=0,
                size_bytes=TIB,
                avail_bytes=TIB // 3,
            ),  # fmt: skip
            at(after, "pcie", "0000:17:00.0", role="gpu", link_width=8, **link),
            at(after, "pcie", "0000:3a:00.0", role="nic", link_width=16, **link),
        ]
    )
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)


@pytest.mark.parametrize("width", [1440, 390])
def test_the_host_card(chromium, live_server, setup, width):  # noqa: ANN001
    axe = _axe()
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    context.route(  # from the app's own origin: the pages' CSP allows only 'self' scripts
        live_server.url + "/__axe.js",
        lambda route: route.fulfill(body=axe, content_type="application/javascript"),
    )
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw")
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(live_server.url + "/nodes/gpu000/")
    card = page.locator("section[aria-labelledby=host-h]")
    text = card.inner_text()
    assert "1 (+1)" in text and "✗ read-only" in text and "◐ x8 of x16" in text
    assert "12.0 TiB of 400.0 TiB (3%)" in text
    mounts = card.locator("table[aria-labelledby=host-filesystem] tbody tr")
    first, second, third = (mounts.nth(i).inner_text() for i in range(3))
    assert "/checkpoints" in first and "required" in first and "✗ read-only" in first
    assert "/scratch" in second and "required" in second and "✗ missing" in second
    assert "/dev/nvme0n1p2" in third and "required" not in third and "ok" in third
    assert "Clock: not reported" in text
    assert card.locator("table").count() == 3
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.add_script_tag(url=live_server.url + "/__axe.js")
    assert page.evaluate(SCAN) == []  # no serious or critical accessibility violation
    shots = os.environ.get("KUAE_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        card.screenshot(path=f"{shots}/node-host-card-{width}.png")
    page.goto(live_server.url + "/nodes/gpu001/")
    assert "No host readings from this node" in page.content()
    assert "requires the mounts /checkpoints, /scratch" in page.locator("#host-h ~ p").inner_text()
    seen.assert_clean()
    context.close()
