"""The postmortem editor's Add buttons in real Chromium: with the script, two action items
and a timeline entry are added without a reload and saved; without JavaScript the same
button brings the editor back with one more row, and that row saves too."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.incidents.models import Postmortem
from apps.incidents.services import incident_open
from tests.e2e.support import sign_in, watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def incident_pk() -> int:
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    start = timezone.now() - dt.timedelta(days=10)
    nodes = nodes_register(
        cluster=cluster,
        specs=[NodeSpec(hostname=f"gpu{i:03d}", rack="r0", in_service_at=start) for i in range(2)],
    )
    user_create_or_update(username="erin", role="engineer", password="pw", check_password=False)
    return incident_open(
        cluster=cluster,
        title="gpu001 fell off the bus",
        category="gpu",
        severity="sev2",
        detected_at=timezone.now() - dt.timedelta(hours=2),
        nodes=nodes[1:],
    ).pk


def _fill_item(page, index: int, text: str, due: str) -> None:  # noqa: ANN001
    page.fill(f"#id_ai-{index}-text", text)
    page.select_option(f"#id_ai-{index}-owner", "erin")
    page.fill(f"#id_ai-{index}-due", due)


def test_adding_two_action_items_and_a_timeline_entry_without_a_reload(
    chromium, live_server, incident_pk
):
    due = (timezone.now().date() + dt.timedelta(days=5)).isoformat()
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "erin", "pw")
    page.goto(f"{live_server.url}/incidents/{incident_pk}/postmortem/")
    page.evaluate("document.body.dataset.loaded = 'once'")  # gone if the page reloads
    assert page.locator("#ai-rows tr").count() == 2
    page.click("button:has-text('Add action item')")
    page.click("button:has-text('Add action item')")
    assert page.locator("#ai-rows tr").count() == 4
    assert page.input_value("input[name=ai-TOTAL_FORMS]") == "4"
    assert page.evaluate("document.activeElement.id") == "id_ai-3-text"  # focus on the new row
    assert page.get_attribute("#id_ai-3-text", "aria-label") == "Text, row 4"
    tl_rows = page.locator("#tl-rows tr").count()
    page.click("button:has-text('Add timeline entry')")
    assert page.locator("#tl-rows tr").count() == tl_rows + 1
    assert page.evaluate("document.body.dataset.loaded") == "once"  # no reload
    for i, text in enumerate(["reseat risers", "check riser torque", "add a move checklist"]):
        _fill_item(page, i + 1, text, due)  # rows 2-4: one of the first blanks, both added
    page.fill(
        f"#id_tl-{tl_rows}-at",
        (timezone.now() - dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S"),
    )
    page.fill(f"#id_tl-{tl_rows}-text", "riser reseated, GPU back")
    page.click("button:has-text('Save draft')")
    page.wait_for_selector("text=Draft saved.")
    postmortem = Postmortem.objects.get(incident_id=incident_pk)
    assert sorted(postmortem.action_items.values_list("text", flat=True)) == [
        "add a move checklist",
        "check riser torque",
        "reseat risers",
    ]
    assert postmortem.timeline[-1]["text"] == "riser reseated, GPU back"
    seen.assert_clean()
    context.close()


def test_without_javascript_the_button_brings_back_one_more_row(chromium, live_server, incident_pk):
    due = (timezone.now().date() + dt.timedelta(days=5)).isoformat()
    context = chromium.new_context(
        viewport={"width": 1400, "height": 900}, java_script_enabled=False
    )
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "erin", "pw")
    page.goto(f"{live_server.url}/incidents/{incident_pk}/postmortem/")
    _fill_item(page, 0, "reseat risers", due)
    page.fill("#id_ai-1-text", "check riser torque")  # owner not chosen yet: no error
    page.click("button:has-text('Add action item')")
    page.wait_for_selector("#id_ai-2-text")
    assert page.locator("#ai-rows tr").count() == 3
    assert page.input_value("#id_ai-0-text") == "reseat risers"  # kept as typed
    assert page.locator(".err").count() == 0
    page.select_option("#id_ai-1-owner", "erin")
    _fill_item(page, 2, "add a move checklist", due)
    page.click("button:has-text('Save draft')")
    page.wait_for_selector("text=Draft saved.")
    items = Postmortem.objects.get(incident_id=incident_pk).action_items
    assert items.count() == 3
    seen.assert_clean()
    context.close()
