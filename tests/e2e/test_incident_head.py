"""An incident's page head (issue 42): its Acknowledge and Assign controls sit on a row of
their own, clear of the title, at 1440 and 390 px; its description reads as Markdown, a
`<script>` in it shown as the text it is (docs/pages.md, Words a person uses)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.incidents.services import incident_open
from tests.e2e.support import watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/layout-shots")

BOXES = """() => {
  const box = e => { const r = e.getBoundingClientRect();
                     return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
  const head = document.querySelector('.page-head');
  return {
    vw: window.innerWidth, scroll: document.documentElement.scrollWidth,
    title: [...head.querySelector('h1').getClientRects()].map(r => ({l: r.left, r: r.right,
                                                                    t: r.top, b: r.bottom})),
    controls: [...head.querySelectorAll('button, select')].map(box),
  };
}"""


def overlap(a: dict, b: dict) -> bool:
    return a["l"] < b["r"] and b["l"] < a["r"] and a["t"] < b["b"] and b["t"] < a["b"]


def test_the_incident_head_keeps_its_title_clear_of_its_buttons(chromium, live_server):
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    nodes = nodes_register(cluster=cluster, specs=[NodeSpec(hostname="r007n09", rack="r007")])
    incident = incident_open(
        cluster=cluster,
        title="Hang on r007n09: rank 72 stuck in load_batch while 127 ranks wait in all_reduce",
        category="hang",
        severity="sev1",
        detected_at=timezone.now(),
        nodes=nodes,
        actor="check:job_hang",
        description=(
            "Rank 72 on r007n09 is in `load_batch`; 127 ranks wait in `all_reduce`.\n"
            "The node is **suspect**. <script>window.pwned = 1</script>"
        ),
    )
    user_create_or_update(username="erin", role="engineer", password="pw", check_password=False)
    user_create_or_update(username="otto", role="operator", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1440, "height": 900})
    seen = watch(page, live_server.url)
    page.goto(live_server.url + "/login/")
    page.fill("#id_username", "erin")
    page.fill("#id_password", "pw")
    page.click(".login button[type=submit]")  # not the header's language switch
    page.wait_for_selector("main")
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/incidents/{incident.pk}/")
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / f"incident-head-{width}.png"))
        m = page.evaluate(BOXES)
        assert len(m["controls"]) >= 3, m  # Acknowledge, Assign to me, the assignee and Assign
        for line in m["title"]:
            for control in m["controls"]:
                assert not overlap(line, control), (width, line, control)
        # the controls sit below the title, with room between
        title_bottom = max(line["b"] for line in m["title"])
        assert min(c["t"] for c in m["controls"]) >= title_bottom + 4, (width, m)
        for control in m["controls"]:
            assert control["l"] >= 0 and control["r"] <= m["vw"], (width, control)
        assert m["scroll"] <= m["vw"], (width, m)
        # the description as Markdown: code and bold, the script shown, never run
        description = page.locator(".md").last
        assert description.locator("code", has_text="load_batch").count() == 1
        assert description.locator("strong", has_text="suspect").count() == 1
        assert "<script>window.pwned = 1</script>" in description.inner_text()
        assert page.evaluate("() => window.pwned") is None
    seen.assert_clean()
    page.close()
