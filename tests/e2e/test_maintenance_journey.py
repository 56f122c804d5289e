"""An operator in real Chromium books a maintenance window from the page, sees it on the
calendar and on the node page, and ends it (docs/maintenance.md)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.models import Node
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.maintenance.models import MaintenanceWindow
from tests.e2e.support import sign_in, watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_operator_books_a_window_and_sees_it_on_the_calendar_and_node_page(chromium, live_server):
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    start = timezone.now() - dt.timedelta(days=3)
    nodes_register(
        cluster=cluster,
        specs=[NodeSpec(hostname=f"gpu{i:03d}", rack="r0", in_service_at=start) for i in range(8)],
    )
    user_create_or_update(username="otto", role="operator", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    seen = watch(page, live_server.url)

    sign_in(page, live_server.url, "otto", "pw")
    page.click("nav >> text=Maintenance")
    page.wait_for_selector("h1 >> text=Maintenance")
    page.click("summary >> text=Book a window")
    page.select_option("#id_cluster", "c1")
    page.fill("#id_nodes", "gpu[002-003]")
    assert page.input_value("#id_start")  # start defaults to now
    end = (timezone.now() + dt.timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")
    page.fill("#id_end", end)
    page.fill("#id_reason", "replace PSU in r0")
    page.click("button >> text=Book window")
    page.wait_for_selector("text=booked on 2 nodes")
    window = MaintenanceWindow.objects.get()
    assert page.locator("h1").inner_text() == f"Maintenance window #{window.pk}"
    assert {n.hostname: n.state for n in Node.objects.filter(hostname__startswith="gpu00")} == {
        **{f"gpu{i:03d}": "healthy" for i in range(8)},
        "gpu002": "maintenance",
        "gpu003": "maintenance",
    }

    page.click("nav >> text=Maintenance")
    # The click does not wait for the new page: wait for the calendar's bar itself (counting
    # at once may count on the window's own page, still shown).
    bar = page.locator(f"a.mw-bar >> text=#{window.pk}")
    bar.wait_for(state="visible")
    assert bar.count() == 1
    assert page.locator("#cur-h").inner_text().startswith("In progress")
    page.click(f"section[aria-labelledby=cur-h] a >> text=#{window.pk}")
    page.click("a.chip >> text=gpu002")
    page.wait_for_selector("h1 >> text=gpu002")
    banner = page.locator("[data-maintenance-window]")
    assert "In maintenance" in banner.inner_text() and "replace PSU in r0" in banner.inner_text()
    banner.locator("a").click()
    page.click("button >> text=End now")
    page.wait_for_selector("text=ended: its nodes are given back")
    assert Node.objects.get(hostname="gpu002").state == "healthy"
    seen.assert_clean()
    page.close()
