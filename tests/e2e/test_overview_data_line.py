"""The overview's "data from" line refreshes with its panels (issue 26), in real Chromium
(docs/operations.md, Watching the watcher): evidence 4 min old reads "data from 4 min ago"
in red; once a check completes, the next panel refresh makes the line fresh, no reload."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from apps.accounts.services import user_create_or_update
from apps.fleet.services import cluster_create
from apps.health.models import CheckRun
from apps.health.services import schedules_ensure
from tests.e2e.support import sign_in, watch
from tests.e2e.test_live_and_themes import _until
from tests.health.test_pipeline import _done, _fresh

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LINE = ".page-head [data-updated]"


def test_data_line_refreshes_with_the_panels(chromium, live_server):
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    schedules_ensure()
    _done(cluster, "heartbeat", 240)
    cache.clear()
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    page.clock.install()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw")
    page.goto(live_server.url + "/?cluster=c1")
    line = page.locator(LINE)
    assert "data from 4 min ago" in line.inner_text()
    assert "data-stale" in (line.get_attribute("class") or "")
    CheckRun.objects.all().delete()
    _fresh(cluster)
    cache.clear()
    page.clock.run_for(20_000)  # the panels' period (data-interval="20")
    _until(page, lambda: "data-stale" not in (line.get_attribute("class") or ""), 30)
    text = line.inner_text()
    assert "s ago" in text and "min ago" not in text, text
    seen.assert_clean()
    page.close()
