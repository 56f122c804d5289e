"""An operator in real Chromium drains a suspect node from the health grid."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.models import Node, NodeStateChange
from apps.fleet.services import NodeSpec, cluster_create, node_set_state, nodes_register
from tests.e2e.support import sign_in, watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_operator_drains_a_suspect_node_from_the_health_grid(chromium, live_server):
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    start = timezone.now() - dt.timedelta(days=3)
    nodes = nodes_register(
        cluster=cluster,
        specs=[NodeSpec(hostname=f"gpu{i:03d}", rack="r0", in_service_at=start) for i in range(8)],
    )
    node_set_state(
        node=nodes[5],
        state="suspect",
        reason="slow_node: compute 1.4× the job median",
        source="check",
    )
    user_create_or_update(username="otto", role="operator", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    seen = watch(page, live_server.url)

    sign_in(page, live_server.url, "otto", "pw")
    page.click("nav >> text=Health")
    page.click("a.tile.state-suspect")  # the one suspect tile in the grid
    page.wait_for_selector("h1 >> text=gpu005")
    page.select_option("#id_state", "drained")
    page.fill("#id_reason", "drain for GEMM re-test")
    page.click("text=Apply")
    page.wait_for_selector("text=gpu005 is now drained.")
    node = Node.objects.get(hostname="gpu005")
    assert node.state == "drained"
    change = NodeStateChange.objects.filter(node=node).order_by("-at", "-id").first()
    assert (change.by, change.source, change.reason) == ("otto", "user", "drain for GEMM re-test")
    page.click("nav >> text=Health")
    page.wait_for_selector("a.tile.state-drained")  # the click does not wait for the page
    assert page.locator("a.tile.state-drained").count() == 1
    assert page.locator("a.tile.state-suspect").count() == 0
    seen.assert_clean()
    page.close()
