"""Charts in real Chromium, on a wide screen and a phone: no text of the reliability chart
runs into another (axis titles, tick labels, legend, target label, notes), a week with no
failure is marked rather than left empty, and hovering a checkpoint on a job's chart says
its step, time and pause."""

from __future__ import annotations

import time

import pytest

from apps.accounts.services import user_create_or_update
from apps.jobs.models import Job
from tests.e2e.support import sign_in, watch
from tests.support import simulate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every text Plotly drew in a chart but the hover labels, with its box on the page.
TEXTS = """(chart) => [...chart.querySelectorAll('.main-svg text, .main-svg .legendtext')]
  .filter((t) => !t.closest('.hoverlayer') && t.textContent.trim() && t.getBBox().width > 0)
  .map((t) => { const r = t.getBoundingClientRect();
    return {text: t.textContent, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; })"""


def drawn(page, selector: str, timeout: float = 20.0) -> None:  # noqa: ANN001
    """Wait until the chart in `selector` has been drawn (polled: the CSP forbids eval)."""
    deadline = time.monotonic() + timeout
    while not page.locator(f"{selector} .main-svg").count():
        assert time.monotonic() < deadline, f"{selector} never drew"
        time.sleep(0.2)
    time.sleep(0.5)  # the legend and annotations settle after the first paint


def overlaps(texts: list[dict]) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes intersect by more than a pixel each way."""
    found = []
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            if min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > 1 and (
                min(a["y1"], b["y1"]) - max(a["y0"], b["y0"]) > 1
            ):
                found.append((a["text"], b["text"]))
    return found


def test_reliability_chart_text_never_overprints(chromium, live_server) -> None:
    # One simulated history (seconds to write) read on both widths.
    simulate(gpus=256, days=40, seed=2, failure_rate=0.03)
    user_create_or_update(username="mia", role="manager", password="pw-mia", check_password=False)
    for width in (1440, 390):
        context = chromium.new_context(viewport={"width": width, "height": 1000})
        page = context.new_page()
        seen = watch(page, live_server.url)
        sign_in_anywhere(page, live_server.url)
        page.goto(live_server.url + "/reliability/")
        chart = "[data-figure-json=trend-data]"
        drawn(page, chart)
        box = page.locator(chart).bounding_box()
        texts = page.locator(chart).evaluate(TEXTS)
        assert len(texts) > 10 and not overlaps(texts), (width, overlaps(texts))
        inside = [
            t for t in texts if t["x0"] >= box["x"] - 1 and t["x1"] <= box["x"] + box["width"] + 1
        ]
        assert inside == texts, (width, [t["text"] for t in texts if t not in inside])
        names = {t["text"] for t in texts}
        assert {"MTBF (log)", "MTTR (min)", "cluster MTBF"} <= names, (width, names)
        assert "nodata" in names, width  # "no data" on two lines: the weeks before the cluster
        context.close()
        seen.assert_clean()


def sign_in_anywhere(page, base_url: str) -> None:  # noqa: ANN001
    """Sign in as mia on any width (on a phone the navigation is folded away)."""
    if page.viewport_size["width"] >= 800:
        sign_in(page, base_url, "mia", "pw-mia")
        return
    page.goto(base_url + "/login/")
    page.fill("#id_username", "mia")
    page.fill("#id_password", "pw-mia")
    page.click(".login button[type=submit]")  # not the header's language switch
    page.wait_for_url(lambda url: "/login" not in url)


def test_hovering_a_checkpoint_says_its_step_time_and_pause(chromium, live_server) -> None:
    simulate(gpus=128, days=4, seed=7, failure_rate=0.0)
    user_create_or_update(username="mia", role="manager", password="pw-mia", check_password=False)
    job = Job.objects.filter(checkpoints__isnull=False).order_by("-gpu_count").first()
    assert job is not None
    context = chromium.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw-mia")
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    drawn(page, ".chart")
    ticks = page.locator(".chart .scatterlayer .trace .point")
    strip = page.locator(".chart .main-svg .y4tick text", has_text="checkpoints")
    assert strip.count() == 1
    level = strip.bounding_box()["y"] + strip.bounding_box()["height"] / 2
    marks = [b for b in (ticks.nth(k).bounding_box() for k in range(ticks.count())) if b]
    on_strip = [b for b in marks if abs(b["y"] + b["height"] / 2 - level) < 4]
    assert len(on_strip) >= 10  # every mark on the strip's row, none on the MFU panel
    middle = on_strip[len(on_strip) // 2]
    page.mouse.move(middle["x"] + middle["width"] / 2, middle["y"] + middle["height"] / 2)
    deadline = time.monotonic() + 5
    while "checkpoint" not in (page.locator(".hoverlayer").text_content() or ""):
        assert time.monotonic() < deadline, "no hover label on a checkpoint"
        time.sleep(0.1)
    label = page.locator(".hoverlayer").text_content()
    assert "at step" in label and "UTC" in label and "training paused" in label, label
    context.close()
    seen.assert_clean()
