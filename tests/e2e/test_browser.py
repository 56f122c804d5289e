"""An operator signs in and opens the overview, a node and a job, in real Chromium."""

from __future__ import annotations

import pytest

from apps.accounts.services import user_create_or_update
from apps.jobs.models import Job
from tests.e2e.support import watch
from tests.support import simulate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_operator_signs_in_and_sees_the_cluster(chromium, live_server, tmp_path):
    simulate(gpus=256, days=3, seed=1)
    user_create_or_update(
        username="otto", role="operator", password="pw-otto", check_password=False
    )
    flagship = Job.objects.get(external_id="sim-0")
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    seen = watch(page, live_server.url)

    page.goto(live_server.url + "/")
    assert "/login/" in page.url  # anonymous visitors are sent to sign in
    page.fill("#id_username", "otto")
    page.fill("#id_password", "pw-otto")
    page.click(".login button[type=submit]")  # not the header's language switch
    page.wait_for_selector("nav >> text=Nodes")
    assert page.locator("h1").inner_text() == "kuae-sim"
    page.wait_for_selector("a.tile")  # healthy tiles are drawn by the page's script
    assert page.locator("a.tile").count() == 32
    assert page.locator(".kpi").count() >= 5
    page.screenshot(path=str(tmp_path / "overview.png"), full_page=True)

    page.click(f"text={flagship.name}")
    page.wait_for_selector(".chart .main-svg", timeout=20_000)  # Plotly drew the chart
    assert page.locator(".chart .scatterlayer .trace").count() >= 3

    page.click("nav >> text=Nodes")
    page.click("text=r000n01")
    page.wait_for_selector("text=State history")
    assert page.locator("table").first.locator("tbody tr").count() == 8  # its GPUs

    seen.assert_clean()
    page.close()
