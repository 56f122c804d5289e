"""Engineers in real Chromium: one files an incident and writes its postmortem, another
approves it; nothing is fetched from outside the app and nothing logs an error."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.incidents.models import Incident, Postmortem
from tests.e2e.support import sign_in, watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_engineer_files_and_writes_a_postmortem_another_approves(chromium, live_server):
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    start = timezone.now() - dt.timedelta(days=10)
    nodes_register(
        cluster=cluster,
        specs=[NodeSpec(hostname=f"gpu{i:03d}", rack="r0", in_service_at=start) for i in range(4)],
    )
    for name in ("erin", "eve"):
        user_create_or_update(username=name, role="engineer", password="pw", check_password=False)

    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "erin", "pw")
    page.click("nav >> text=Incidents")
    page.click("text=File an incident")
    page.fill("#id_title", "gpu001 fell off the bus")
    page.select_option("#id_cluster", "c1")
    page.select_option("#id_category", "gpu")
    page.select_option("#id_severity", "sev3")
    page.fill("#id_nodes", "gpu[001-002]")
    page.click("text=File incident")
    page.wait_for_selector("text=Incident filed.")
    incident = Incident.objects.get()
    assert page.locator(".node-chips a").count() == 2

    page.click("text=write the postmortem")
    page.fill("#id_summary", "GPU 3 of gpu001 dropped off the bus during step 81,200")
    page.fill("#id_root_cause", "a riser card loosened in transport")
    page.fill("#id_ai-0-text", "reseat risers on rack r0")
    page.select_option("#id_ai-0-owner", "erin")
    page.fill("#id_ai-0-due", (timezone.now().date() + dt.timedelta(days=5)).isoformat())
    page.click("text=Save and submit for review")
    page.wait_for_selector("text=Saved and submitted for review.")
    assert page.locator(".badge.pm-in_review").count() == 1
    assert page.locator("button:has-text('Approve')").count() == 0  # not for the author
    context.close()
    # A postmortem is approved once its incident is over (its cost no longer grows).
    Incident.objects.filter(pk=incident.pk).update(status="resolved", resolved_at=timezone.now())

    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    seen_too = watch(page, live_server.url)
    sign_in(page, live_server.url, "eve", "pw")
    page.goto(f"{live_server.url}/incidents/{incident.pk}/postmortem/")
    page.fill("#id_comment", "clear, thanks")
    page.click("button:has-text('Approve')")
    page.wait_for_selector("text=Approved.")
    postmortem = Postmortem.objects.get()
    assert (postmortem.status, postmortem.author.username, postmortem.reviewer.username) == (
        "approved",
        "erin",
        "eve",
    )
    page.click("text=Action items")
    page.wait_for_selector("main >> text=reseat risers on rack r0")  # the click does not wait
    context.close()
    seen.assert_clean()
    seen_too.assert_clean()
