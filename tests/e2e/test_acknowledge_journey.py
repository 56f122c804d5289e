"""An operator acknowledges a sev1 from its page in real Chromium (docs/on-call.md): one
click, the incident investigating, one timeline line, and no button left to press."""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.incidents.models import Incident
from apps.incidents.services import incident_open
from tests.e2e.support import sign_in, watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_operator_acknowledges_and_takes_an_incident_from_its_page(chromium, live_server):
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    nodes = nodes_register(cluster=cluster, specs=[NodeSpec(hostname="gpu001", rack="r0")])
    incident = incident_open(
        cluster=cluster,
        title="XID 79 on gpu001 GPU 3",
        category="gpu",
        severity="sev1",
        detected_at=timezone.now(),
        nodes=nodes,
        actor="check:gpu_errors",
    )
    lines = incident.timeline.count()
    user_create_or_update(username="otto", role="operator", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "otto", "pw")
    page.goto(f"{live_server.url}/incidents/{incident.pk}/")
    assert page.locator(".facts").get_by_text("not yet", exact=True).is_visible()  # not acked
    page.click("button:has-text('Acknowledge')")
    page.wait_for_selector(f"text=Acknowledged #{incident.pk}.")
    assert page.locator(".page-head .badge >> text=Investigating").is_visible()
    assert page.locator("button:has-text('Acknowledge')").count() == 0
    page.click("button:has-text('Assign to me')")
    page.wait_for_selector("dd >> text=otto")
    incident.refresh_from_db()
    assert (incident.status, incident.acknowledged_by, incident.assignee) == (
        "investigating",
        "otto",
        "otto",
    )
    assert incident.timeline.count() == lines + 2  # the acknowledgement, the assignee
    assert Incident.objects.get(pk=incident.pk).acknowledged_at is not None
    seen.assert_clean()
    page.close()
