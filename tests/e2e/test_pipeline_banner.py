"""The pipeline's red banner on a page left open, in real Chromium (issue 42;
docs/operations.md, Watching the watcher): a wall screen that never reloads shows the
banner within a refresh once the worker stops answering (a frozen worker: its answers
stop), and drops it within a refresh once the worker answers again, no reload."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.cache import cache
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.common.heartbeats import heartbeats_record
from apps.fleet.services import cluster_create
from tests.e2e.support import sign_in, watch
from tests.e2e.test_live_and_themes import _until
from tests.health.test_pipeline import _fresh

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BANNER = "#pipeline-banner [data-pipeline='stale']"


def test_banner_comes_and_goes_on_a_page_left_open(chromium, live_server):
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    _fresh(cluster)
    cache.clear()
    user_create_or_update(username="mia", role="manager", password="pw", check_password=False)
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    page.clock.install()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "mia", "pw")
    page.goto(live_server.url + "/?cluster=c1")
    assert page.locator(BANNER).count() == 0
    # the worker frozen: its last answer 3 min ago, beat still ticking
    heartbeats_record(["beat"])
    heartbeats_record(["worker:celery@w1"], at=timezone.now() - dt.timedelta(minutes=3))
    cache.clear()
    page.clock.run_for(20_000)  # the page's refresh period (data-interval="20")
    _until(page, lambda: page.locator(BANNER).count() == 1, 30)
    words = page.locator(BANNER).inner_text()
    assert "No worker has answered for 3 min" in words, words
    assert "may be stopped or stalled" in words and "not running" not in words, words
    # the worker continued: it answers again, and the banner goes without a reload
    heartbeats_record(["beat", "worker:celery@w1"])
    cache.clear()
    page.clock.run_for(20_000)
    _until(page, lambda: page.locator(BANNER).count() == 0, 30)
    assert page.locator("#pipeline-banner").bounding_box()["height"] == 0  # no space kept
    seen.assert_clean()
    page.close()
