"""The reliability page's recovery time by week and its parts in real Chromium at 1440 and
390 px (docs/formulas.md, Recovery time and its parts): drawn, its texts never over one
another nor outside the chart, the reference line labelled, the empty weeks said, and axe-core
finds no serious or critical violation on the page."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.common.weeks import WEEK, week_start
from apps.fleet.services import cluster_create
from apps.incidents.services import incident_open
from tests.e2e.support import watch
from tests.e2e.test_chart_layout import TEXTS, drawn, overlaps, sign_in_anywhere
from tests.e2e.test_every_page import SCAN, _axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/layout-shots")
M = dt.timedelta(minutes=1)


def test_recovery_by_week_draws_clear_at_1440_and_390_px(chromium, live_server) -> None:
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    this = week_start(timezone.now())
    # weeks -1 and -3 have recoveries (one of 40 minutes, over the 10-minute line); -2 none
    for weeks_back, marks in ((1, (2, 5, 9, 14)), (1, (4, 5, 7, 40)), (3, (1, 2, 3, 6))):
        failed = this - weeks_back * WEEK + dt.timedelta(days=1)
        detect, loc, mit, rec = (failed + k * M for k in marks)
        incident_open(
            cluster=cluster,
            title="XID 79",
            category="gpu",
            severity="sev2",
            occurred_at=failed,
            detected_at=detect,
            localized_at=loc,
            mitigated_at=mit,
            recovered_at=rec,
            interrupts_job=True,
            actor="erin",
        )
    user_create_or_update(username="mia", role="manager", password="pw-mia", check_password=False)
    SHOTS.mkdir(exist_ok=True)
    axe = _axe()
    for width in (1440, 390):
        context = chromium.new_context(viewport={"width": width, "height": 1000})
        # axe from the app's own origin: the pages' CSP allows only 'self' scripts
        context.route(
            live_server.url + "/__axe.js",
            lambda route: route.fulfill(body=axe, content_type="application/javascript"),
        )
        page = context.new_page()
        seen = watch(page, live_server.url)
        sign_in_anywhere(page, live_server.url)
        page.goto(live_server.url + "/reliability/?cluster=c1&days=30")
        chart = "[data-figure-json=recovery-data]"
        drawn(page, chart)
        page.locator(chart).screenshot(path=str(SHOTS / f"recovery-by-week-{width}.png"))
        box = page.locator(chart).bounding_box()
        texts = page.locator(chart).evaluate(TEXTS)
        assert not overlaps(texts), (width, overlaps(texts))
        outside = [
            t["text"]
            for t in texts
            if t["x0"] < box["x"] - 1 or t["x1"] > box["x"] + box["width"] + 1
        ]
        assert not outside, (width, outside)
        names = {t["text"] for t in texts}
        assert {"detect", "localise", "mitigate", "restart", "mean minutes"} <= names, names
        assert "recovery in minutes: 10 min" in names, names
        assert "nodata" in names, width  # the weeks with no recovery say so
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.add_script_tag(url=live_server.url + "/__axe.js")
        assert page.evaluate(SCAN) == [], width
        context.close()
        seen.assert_clean()
