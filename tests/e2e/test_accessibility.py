"""WCAG 2.2 AA in real Chromium (issue 18, item 4): axe-core finds no serious or critical
violation on any page, light or dark; a skip link comes first; the node grid is one tab
stop that arrow keys move through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.accounts.services import user_create_or_update
from apps.fleet.models import Node
from apps.incidents.models import Incident
from apps.jobs.models import Job
from tests.e2e.support import sign_in, watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
SCAN = """() => axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
  .filter(v => v.impact === 'serious' || v.impact === 'critical')
  .map(v => v.id + ' (' + v.impact + '): '
    + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')))"""


def _axe() -> str:
    if not AXE.exists():
        reason = "axe-core is not installed (make test runs npm ci --prefix tests/e2e)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return AXE.read_text()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_serious_or_critical_violation_on_any_page(chromium, live_server, scheme):
    axe = _axe()
    call_command("simulate", gpus=64, days=7, seed=7)
    user_create_or_update(username="erin", role="engineer", password="pw", check_password=False)
    context = chromium.new_context(viewport={"width": 1400, "height": 900}, color_scheme=scheme)
    # axe is served from the app's own origin: the pages' CSP allows only 'self' scripts
    context.route(
        live_server.url + "/__axe.js",
        lambda route: route.fulfill(body=axe, content_type="application/javascript"),
    )
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "erin", "pw")
    node = Node.objects.order_by("hostname").first()
    job = Job.objects.order_by("id").first()
    incident = Incident.objects.order_by("id").first()
    pages = [
        "/",
        "/nodes/",
        f"/nodes/{node.hostname}/",
        "/jobs/",
        f"/jobs/{job.pk}/",
        "/incidents/",
        "/incidents/new/",
        "/action-items/",
        "/alerts/unrouted/",
        "/reliability/",
        "/reports/weekly/",
        "/reports/trends/",
        "/health/",
        "/maintenance/",
        "/topology/",
    ]
    if incident is not None:
        pages += [f"/incidents/{incident.pk}/", f"/incidents/{incident.pk}/postmortem/"]
    found = {}
    for url in pages:
        page.goto(live_server.url + url)
        page.wait_for_load_state("networkidle")
        page.add_script_tag(url=live_server.url + "/__axe.js")
        violations = page.evaluate(SCAN)
        if violations:
            found[url] = violations
    assert not found, found
    seen.assert_clean()
    context.close()


def test_skip_link_first_and_the_node_grid_is_one_tab_stop(chromium, live_server):
    call_command("simulate", gpus=64, days=1, seed=8)
    user_create_or_update(username="otto", role="operator", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    sign_in(page, live_server.url, "otto", "pw")
    page.goto(live_server.url + "/?cluster=kuae-sim")
    page.wait_for_selector(".grid a.tile")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.className") == "skip-link"
    assert page.locator(".skip-link").is_visible()
    tiles = page.locator(".grid a.tile")
    assert page.locator(".grid a.tile[tabindex='0']").count() == 1  # one stop for the grid
    assert tiles.count() >= 4
    tiles.first.focus()
    first = tiles.nth(0).get_attribute("href")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("() => document.activeElement.getAttribute('href')") == tiles.nth(
        1
    ).get_attribute("href")
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("() => document.activeElement.getAttribute('href')") == first
    page.keyboard.press("End")
    assert page.evaluate(
        "() => document.activeElement.getAttribute('href')"
    ) == tiles.last.get_attribute("href")
    assert page.locator(".grid a.tile[tabindex='0']").count() == 1
    page.close()
