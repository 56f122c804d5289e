"""Engineers in real Chromium: one files an incident and writes its postmortem, another
approves it; nothing is fetched from outside the app and nothing logs an error."""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlsplit

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.incidents.models import Incident, Postmortem

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _watch(page, host: str) -> tuple[list[str], list[str]]:  # noqa: ANN001
    errors: list[str] = []
    outside: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: outside.append(r.url) if urlsplit(r.url).netloc != host else None)
    return errors, outside


def _sign_in(page, url: str, name: str) -> None:  # noqa: ANN001
    page.goto(url + "/login/")
    page.fill("#id_username", name)
    page.fill("#id_password", "pw")
    page.click("button[type=submit]")
    page.wait_for_selector("nav >> text=Incidents")


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
        user_create_or_update(username=name, role="engineer", password="pw")
    host = urlsplit(live_server.url).netloc

    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors, outside = _watch(page, host)
    _sign_in(page, live_server.url, "erin")
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

    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    more_errors, more_outside = _watch(page, host)
    _sign_in(page, live_server.url, "eve")
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
    assert "reseat risers on rack r0" in page.locator("main").inner_text()
    context.close()
    assert not errors + more_errors, errors + more_errors
    assert not outside + more_outside
