"""The node page's per-GPU charts and the GPUs page in real Chromium (issue 15, item 2),
light and dark: six charts drawn from rollups with the note that there is no per-GPU
history, the range links re-ask for the range, and the GPUs page ranks posted values.
Screenshots go to KUAE_SCREENSHOTS (a folder) when it is set, to be looked at."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.models import GPU
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.telemetry.gpu_history import GPU_PANELS
from apps.telemetry.models import NodeRollup
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
    now = timezone.now()
    start = (now - dt.timedelta(hours=24)).replace(second=0, microsecond=0)
    start -= dt.timedelta(minutes=start.minute % 5)
    rows = []
    for i in range(288):
        values = {}
        for k, p in enumerate(GPU_PANELS):
            base = (50, 600, 1900, 80, 60000, 0.5)[k] * (1 + 0.1 * ((i // 12) % 3))
            values |= {f"{p.key}_min": base * 0.9, f"{p.key}_max": base * 1.1}
            values |= {f"{p.key}_sum": base * 8, f"{p.key}_n": 8}
        rows.append(NodeRollup(node=nodes[0], bucket=start + dt.timedelta(minutes=5 * i), **values))
    NodeRollup.objects.bulk_create(rows)
    for n, node in enumerate(nodes):
        for gpu in GPU.objects.filter(node=node):
            metrics = {
                "temp_c": 50 + 3 * n + gpu.index,
                "gpu_util": 10 * gpu.index + n,
                "sm_clock_mhz": 1980 - 60 * gpu.index,
                "power_w": 500 + 10 * gpu.index,
                "tensor_active": 0.4,
            }
            GPU.objects.filter(pk=gpu.pk).update(metrics=metrics, updated_at=now)
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)
    return nodes


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_node_charts_and_gpus_page(chromium, live_server, setup, scheme):  # noqa: ANN001
    context = chromium.new_context(viewport={"width": 1400, "height": 1000}, color_scheme=scheme)
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw")
    page.goto(live_server.url + "/nodes/gpu000/?range=24h#gpu-charts")
    page.wait_for_selector(".chart-gpus.js-plotly-plot")
    assert "KUAE keeps no history per GPU" in page.content()
    assert page.locator(".chart-gpus .cartesianlayer > g.subplot").count() == 6  # six small charts
    shots = os.environ.get("KUAE_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.locator("#gpu-charts").screenshot(path=f"{shots}/node-{scheme}.png")
    page.click("nav.ranges >> text=7 d")
    page.wait_for_url("**/nodes/gpu000/?range=7d*")
    page.wait_for_selector(".chart-gpus.js-plotly-plot")
    page.goto(live_server.url + "/gpus/?cluster=c1")
    hot = page.locator("#gpus-hot tbody tr").first
    assert "gpu003" in hot.inner_text() and "57" in hot.inner_text()
    assert page.locator("#gpus-throttled tbody tr").count() >= 1
    if shots:
        page.screenshot(path=f"{shots}/gpus-{scheme}.png", full_page=True)
    seen.assert_clean()
    context.close()
