"""Incident descriptions, timeline entries and postmortems are shown as Markdown with every
bit of HTML in them escaped (issue 42): `load_batch` as code, **suspect** in bold, a
`<script>` as the text it is, a javascript: link not a link."""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.common.templatetags.kuae import markdown
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.incidents.services import incident_open

EVIL = (
    "Rank 72 is in `load_batch`; the node is **suspect**.\n"
    "<script>alert(1)</script> <img src=x onerror=alert(2)> [click](javascript:alert(3))"
)


def test_markdown_renders_code_and_bold_and_escapes_html():
    html = markdown(EVIL)
    assert "<code>load_batch</code>" in html and "<strong>suspect</strong>" in html
    assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img" not in html and "&lt;img" in html
    assert 'href="javascript' not in html and "<a " not in html
    assert markdown("") == "" and markdown(None) == ""
    link = markdown("[runbook](https://example.org/runbook)")
    assert 'href="https://example.org/runbook"' in link and "noopener" in link


@pytest.mark.django_db
def test_the_incident_page_shows_its_description_and_timeline_as_markdown(client):
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    nodes = nodes_register(cluster=cluster, specs=[NodeSpec(hostname="r007n09", rack="r007")])
    incident = incident_open(
        cluster=cluster,
        title="Hang on r007n09",
        category="hang",
        severity="sev1",
        detected_at=timezone.now(),
        nodes=nodes,
        actor="check:job_hang",
        description=EVIL,
    )
    user_create_or_update(username="otto", role="operator", password="pw", check_password=False)
    client.login(username="otto", password="pw")
    page = client.get(f"/incidents/{incident.pk}/").content.decode()
    assert page.count("<code>load_batch</code>") >= 1
    assert "<strong>suspect</strong>" in page and "**suspect**" not in page
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "onerror=alert(2)>" not in page and 'href="javascript' not in page
