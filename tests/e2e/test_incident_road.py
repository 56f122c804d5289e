"""An incident's road back at 1440 and 390 px (docs/incidents.md, The road back): one line that
wraps inside its card, every mark and every segment's words inside it, none over another,
the page never wider than the screen."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from apps.accounts.services import user_create_or_update
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.incidents.services import incident_open
from tests.e2e.support import watch
from tests.e2e.test_every_page import SCAN, _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/layout-shots")
T0 = dt.datetime(2026, 1, 5, 10, 0, tzinfo=dt.UTC)

BOXES = """() => {
  const box = e => { const r = e.getBoundingClientRect();
                     return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
  const road = document.querySelector('#road');
  return {
    vw: window.innerWidth, scroll: document.documentElement.scrollWidth,
    card: box(road.closest('.card')), road: box(road),
    marks: [...road.querySelectorAll('.road-mark')].map(e => ({...box(e),
             text: e.innerText})),
    words: [...road.querySelectorAll('.road-mark .lbl, .road-mark .at, .road-seg .gap')]
             .filter(e => e.innerText.trim()).map(e => ({...box(e), text: e.innerText})),
    label: road.getAttribute('aria-label'),
  };
}"""


def overlap(a: dict, b: dict) -> bool:
    return (
        a["l"] < b["r"] - 0.5
        and b["l"] < a["r"] - 0.5
        and a["t"] < b["b"] - 0.5
        and (b["t"] < a["b"] - 0.5)
    )


def test_the_road_back_fits_its_card_at_1440_and_390_px(chromium, live_server):
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    nodes = nodes_register(cluster=cluster, specs=[NodeSpec(hostname="r007n09", rack="r007")])

    def at(minutes: float) -> dt.datetime:
        return T0 + dt.timedelta(minutes=minutes)

    incident = incident_open(
        cluster=cluster,
        title="XID 79 on r007n09: GPU fell off the bus",
        category="gpu",
        severity="sev2",
        occurred_at=at(0),
        detected_at=at(3),
        localized_at=at(5),
        mitigated_at=at(12),
        restarted_at=at(10),  # Slurm requeued before the drain
        restored_at=at(14),
        recovered_at=at(14),
        resolved_at=at(200),
        nodes=nodes,
        interrupts_job=True,
        actor="erin",
    )
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)
    axe = _axe()
    SHOTS.mkdir(exist_ok=True)
    for width, scheme in ((1440, "light"), (390, "light"), (390, "dark")):
        context = chromium.new_context(
            viewport={"width": width, "height": 900}, color_scheme=scheme
        )
        # axe from the app's own origin: the pages' CSP allows only 'self' scripts
        context.route(
            live_server.url + "/__axe.js",
            lambda route: route.fulfill(body=axe, content_type="application/javascript"),
        )
        page = context.new_page()
        seen = watch(page, live_server.url)
        page.goto(live_server.url + "/login/")  # sign_in waits for the wide header's nav
        page.fill("#id_username", "mia")
        page.fill("#id_password", "pw")
        page.click(".login button[type=submit]")  # not the header's language switch
        page.wait_for_selector("main")
        page.goto(f"{live_server.url}/incidents/{incident.pk}/")
        page.wait_for_load_state("networkidle")
        name = f"{width}" + ("-dark" if scheme == "dark" else "")
        page.screenshot(path=str(SHOTS / f"incident-road-{name}.png"), full_page=True)
        page.locator("#road").screenshot(path=str(SHOTS / f"incident-road-only-{name}.png"))
        page.add_script_tag(url=live_server.url + "/__axe.js")
        assert page.evaluate(SCAN) == [], (width, scheme)
        m = page.evaluate(BOXES)
        assert m["scroll"] <= m["vw"], (width, m["scroll"])
        assert [x["text"].split("\n")[0] for x in m["marks"]] == [
            "failed",
            "detected",
            "localised",
            "mitigated",
            "restarted",
            "restored",
            "recovered",
            "caught up",
            "resolved",
        ]
        for thing in m["marks"] + m["words"]:
            assert m["card"]["l"] <= thing["l"] and thing["r"] <= m["card"]["r"], (width, thing)
        for i, a in enumerate(m["words"]):
            for b in m["words"][i + 1 :]:
                assert not overlap(a, b), (width, a, b)
        texts = [w["text"] for w in m["words"]]
        assert "2 min before mitigated" in texts and "+3 min" in texts
        assert "caught up not recorded" in m["label"]
        if width == 390:  # it wrapped onto several rows
            assert m["road"]["b"] - m["road"]["t"] > 150, m["road"]
        seen.assert_clean()
        context.close()
