"""The node grids drawn by the page's script in real Chromium (docs/pages.md, Node grids):
the overview, Health and Topology send a rack's plain tiles as a hostlist and a character a
node, and the script draws them as the links they were — in the rack's order, with their
titles in the page's words and links to the node pages — beside the tiles the server sent
for the nodes that need attention. Without the script those links stay and the healthy
nodes are counted; the topology's components with nothing wrong open on demand."""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.models import Node
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.health.models import CheckResult
from apps.jobs.models import Job
from tests.e2e.support import sign_in, watch
from tests.e2e.test_every_page import SCAN, _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HOSTS = [f"r{r}n{i:02d}" for r in range(3) for i in range(16)]
# Each tile as the page's script draws it: (href, title, classes) in page order.
TILES = """sel => [...document.querySelectorAll(sel)].map(a =>
  [a.getAttribute('href'), a.title, a.className])"""


@pytest.fixture
def fleet(db):  # noqa: ANN001, ANN201
    """Three racks of 16 behind a leaf switch, two PDUs and two NVLink domains each; r1n05
    drained, a check failing on r2n03, a job on rack r0."""
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    nodes = nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(
                hostname=h,
                rack=h[:2],
                switch=f"leaf-{h[1]}",
                pdu=f"pdu-{h[1]}{'ab'[int(h[3:]) // 8]}",
                nvlink_domain=f"nvl-{h[1]}{'ab'[int(h[3:]) // 8]}",
            )
            for h in HOSTS
        ],
    )
    Node.objects.filter(hostname="r1n05").update(state="drained", state_reason="xid 79")
    now = timezone.now()
    failing = Node.objects.get(hostname="r2n03")
    CheckResult.objects.create(
        cluster=cluster,
        kind="thermal",
        target="node:r2n03",
        node=failing,
        status="fail",
        message="GPU 3 at 91 °C",
        at=now,
        since=now,
    )
    job = Job.objects.create(
        cluster=cluster, name="train", gpu_count=128, status="running", started_at=now
    )
    job.nodes.set([n for n in nodes if n.hostname.startswith("r0")])
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)


def _context(chromium, live_server, **options):  # noqa: ANN001, ANN202
    context = chromium.new_context(viewport={"width": 1440, "height": 900}, **options)
    axe = _axe()
    context.route(
        live_server.url + "/__axe.js",
        lambda route: route.fulfill(body=axe, content_type="application/javascript"),
    )
    return context


def test_the_script_draws_the_healthy_tiles_with_titles_and_links(chromium, live_server, fleet):  # noqa: ANN001
    context = _context(chromium, live_server)
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw")

    page.goto(live_server.url + "/?cluster=c1")
    tiles = page.evaluate(TILES, ".grid a.tile")
    assert [href for href, _, _ in tiles] == [f"/nodes/{h}/" for h in HOSTS]  # every node, in order
    by_host = {href.split("/")[2]: (title, cls) for href, title, cls in tiles}
    assert by_host["r0n00"] == ("r0n00 · Healthy · in a job", "tile state-healthy busy")
    assert by_host["r1n04"] == ("r1n04 · Healthy", "tile state-healthy")
    assert by_host["r1n05"] == ("r1n05 · Drained · xid 79", "tile state-drained")  # sent
    assert page.locator(".grid a.tile[tabindex='0']").count() == 1  # one tab stop, arrows move
    page.locator(".grid a.tile").first.focus()
    page.keyboard.press("End")
    assert page.evaluate("document.activeElement.getAttribute('href')") == "/nodes/r2n15/"
    page.add_script_tag(url=live_server.url + "/__axe.js")
    assert page.evaluate(SCAN) == []

    page.goto(live_server.url + "/health/?cluster=c1")
    tiles = page.evaluate(TILES, "#live-grid a.tile")
    assert len(tiles) == 48
    by_host = {href.split("/")[2]: (title, cls) for href, title, cls in tiles}
    assert by_host["r2n04"] == ("r2n04 · Healthy", "tile state-healthy busy")
    assert by_host["r2n03"] == (
        "r2n03 · Healthy · fail: thermal: GPU 3 at 91 °C",
        "tile state-healthy busy worst-fail",
    )

    # the topology: the components with a drained node shown, the rest one closed line a kind
    page.goto(live_server.url + "/topology/?cluster=c1")
    switches = page.locator("section[aria-labelledby='switch-h']")
    assert switches.locator("[data-component]").count() == 1  # leaf-1, its drained node
    assert switches.locator("a.tile").count() == 16
    line = switches.locator("details[data-quiet]")
    assert "2 more with every node healthy" in line.locator("summary").inner_text()
    line.locator("summary").click()
    rows = switches.locator("[data-component]")
    assert [rows.nth(i).get_attribute("data-component") for i in range(3)] == [
        "switch:leaf-1",
        "switch:leaf-0",
        "switch:leaf-2",
    ]
    tiles = page.evaluate(TILES, "[id='switch:leaf-2'] a.tile")
    assert [href for href, _, _ in tiles] == [f"/nodes/r2n{i:02d}/" for i in range(16)]
    assert tiles[0][1:] == ["r2n00 · Healthy", "tile state-healthy"]
    assert "16 nodes" in rows.nth(2).inner_text()
    page.add_script_tag(url=live_server.url + "/__axe.js")
    assert page.evaluate(SCAN) == []
    # an address naming a quiet component opens its line and shows it
    page.goto(live_server.url + "/topology/?cluster=c1#pdu:pdu-2b")
    page.wait_for_selector("[id='pdu:pdu-2b'] a.tile")
    assert page.locator("[id='pdu:pdu-2b'] a.tile").count() == 8
    page.goto(live_server.url + "/topology/?cluster=c1&x=1#nvlink_domain:nvl-0a")  # a new load
    page.wait_for_selector("[id='nvlink_domain:nvl-0a'] a.tile")
    assert page.locator("details[data-quiet='quiet-nvlink_domain']").get_attribute("open") == ""
    seen.assert_clean()
    context.close()


def test_without_the_script_the_nodes_needing_attention_stay_links(chromium, live_server, fleet):  # noqa: ANN001
    context = _context(chromium, live_server, java_script_enabled=False)
    page = context.new_page()
    sign_in(page, live_server.url, "mia", "pw")
    page.goto(live_server.url + "/?cluster=c1")
    assert page.locator(".grid a.tile").count() == 1  # r1n05, drained
    assert "And 47 healthy nodes, every check passing" in page.locator("main").inner_text()
    page.goto(live_server.url + "/health/?cluster=c1")
    assert page.locator("#live-grid a.tile").count() == 2  # drained, and a check failing
    assert "And 46 healthy nodes" in page.locator("main").inner_text()
    context.close()
