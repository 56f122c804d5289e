"""Charts follow the colour scheme and lists refresh themselves (issue 18, item 3), in real
Chromium: a dark page draws its charts from the dark palette, a light page from the light
one; the Health page and the Nodes list show a change made after they loaded, no reload."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from apps.accounts.services import user_create_or_update
from apps.fleet.models import Node
from apps.fleet.services import node_set_state
from tests.e2e.support import sign_in, watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHART = """() => {
  const el = document.querySelector('.js-plotly-plot');
  const css = getComputedStyle(document.documentElement);
  return {grid: el._fullLayout.xaxis.gridcolor, font: el._fullLayout.font.color,
          line: css.getPropertyValue('--line').trim(), fg: css.getPropertyValue('--fg').trim(),
          bg: css.getPropertyValue('--bg').trim()};
}"""


def _hex(colour: str) -> str:
    """`#2c323a` or `rgb(44, 50, 58)` → `#2c323a` (Plotly keeps what it was given, or rgb)."""
    if colour.startswith("rgb"):
        parts = [int(float(p)) for p in colour[colour.index("(") + 1 : -1].split(",")[:3]]
        return "#" + "".join(f"{p:02x}" for p in parts)
    return colour.lower()


def _until(page, done, seconds: float) -> None:  # noqa: ANN001
    """Wait for the page to change by itself (the page's CSP forbids evaluated strings, so
    no wait_for_function): check every half second, never reload."""
    for _ in range(int(seconds * 2)):
        if done():
            return
        page.wait_for_timeout(500)
    raise AssertionError(f"the page did not update itself within {seconds} s")


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_charts_follow_the_colour_scheme(chromium, live_server, scheme):
    call_command("simulate", gpus=32, days=3, seed=3)
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)
    context = chromium.new_context(viewport={"width": 1400, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw")
    page.goto(live_server.url + "/reports/trends/")
    page.wait_for_selector(".js-plotly-plot .main-svg")
    # The first chart's svg can be there before its laid-out axis is (a CI run read it
    # between the two): read until the axis has its colours, as the person sees it.
    got: dict = {}

    def laid_out() -> bool:
        got.update(page.evaluate(CHART))
        return got["grid"] is not None and got["font"] is not None

    _until(page, laid_out, 10)
    assert _hex(got["grid"]) == got["line"] and _hex(got["font"]) == got["fg"]
    if scheme == "dark":
        assert got["bg"] == "#111418"  # the dark palette, not the light one's white grid
        assert _hex(got["grid"]) != "#eeeeee" and _hex(got["font"]) != "#444444"
    seen.assert_clean()
    context.close()


def test_health_page_and_node_list_update_without_a_reload(chromium, live_server):
    call_command("simulate", gpus=32, days=1, seed=4)
    user_create_or_update(username="otto", role="operator", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    # The page's own clock: real time, moved on by a refresh period instead of waiting it
    # out (the page's timers fire as it passes; its requests are real).
    page.clock.install()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "otto", "pw")
    page.goto(live_server.url + "/health/")
    before = page.locator("#live-grid a.tile.state-down").count()
    node = Node.objects.filter(state="healthy").order_by("hostname").first()
    node_set_state(node=node, state="down", reason="pulled for the test", source="user", by="otto")
    page.clock.run_for(10_000)  # the grid's period (data-live="10")
    _until(page, lambda: page.locator("#live-grid a.tile.state-down").count() > before, 30)
    page.goto(live_server.url + "/nodes/?state=down")
    rows = page.locator("#live-list tbody tr").count()
    other = Node.objects.filter(state="healthy").order_by("hostname").first()
    node_set_state(node=other, state="down", reason="second", source="user", by="otto")
    page.clock.run_for(20_000)  # the list's period (data-live="20")
    _until(page, lambda: page.locator("#live-list tbody tr").count() > rows, 45)
    assert other.hostname in page.locator("#live-list").inner_text()
    seen.assert_clean()
    page.close()


def test_checks_table_shows_the_new_run_once_the_worker_has_run_it(chromium, live_server):
    """ "Run now", then the worker runs it: the Checks table's row leaves "Queued" for the new
    run without a reload (its region, #live-checks, refreshes with the grid) (issue 42)."""
    from apps.common.heartbeats import heartbeats_record
    from apps.fleet.services import NodeSpec, cluster_create, nodes_register
    from apps.health.models import CheckRun
    from apps.health.services import run_execute

    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    nodes_register(
        cluster=cluster, specs=[NodeSpec(hostname=f"gpu{i:03d}", rack="r0") for i in range(2)]
    )
    heartbeats_record(["beat", "worker:celery@w1"])
    user_create_or_update(username="otto", role="operator", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    page.clock.install()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "otto", "pw")
    page.goto(live_server.url + "/health/?cluster=c1")
    page.locator("#live-checks tr", has_text="Heartbeat").locator(
        "button", has_text="Run now"
    ).click()
    page.wait_for_selector("text=Queued 1 check run: Heartbeat.")
    queued = CheckRun.objects.get(kind="heartbeat", status="queued")
    marker = f'#live-checks [data-pending-run="{queued.pk}"]'
    assert page.locator(marker).count() == 1
    run_execute(run_id=queued.pk)
    page.clock.run_for(10_000)  # the table's period (data-live="10")
    _until(page, lambda: page.locator(marker).count() == 0, 30)
    row = page.locator("#live-checks tr", has_text="Heartbeat").inner_text()
    assert "Done" in row and "never" not in row
    seen.assert_clean()
    page.close()
