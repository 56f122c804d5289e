"""The job page when hung (docs/checks.md, Ranks: which rank, which node), in real
Chromium at a laptop's and a phone's width: the sentence naming the culprit's node, every
rank a tile coloured by verdict, the stack most ranks share beside the culprit's. The ranks
are written through the same intake as the agents' (the simulator's hung job). Screenshots
go to KUAE_SCREENSHOTS (a folder) when it is set, to be looked at."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from django.utils import timezone

from apps.accounts.services import user_create_or_update
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.jobs.choices import JobStatus
from apps.jobs.models import Job
from apps.simulator.ranks import hung_ranks_write
from tests.e2e.support import sign_in, watch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HOSTS = [f"gpu-a{i:03d}" for i in range(16)]
CULPRIT = "gpu-a013"
WIDE = "() => [document.documentElement.scrollWidth, window.innerWidth]"


@pytest.fixture
def hung(db) -> Job:  # noqa: ANN001
    cluster = cluster_create(
        name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    nodes = nodes_register(cluster=cluster, specs=[NodeSpec(hostname=h) for h in HOSTS])
    now = timezone.now()
    job = Job.objects.create(
        cluster=cluster,
        name="llm-70b",
        gpu_count=8 * len(HOSTS),
        status=JobStatus.RUNNING,
        started_at=now - dt.timedelta(hours=2),
    )
    job.nodes.set(nodes)
    hung_ranks_write(
        job=job,
        hosts=HOSTS,
        culprit_host=CULPRIT,
        gpus_per_node=8,
        hang_at=now - dt.timedelta(minutes=3),
        step=41216,
        now=now,
    )
    user_create_or_update(username="oli", role="operator", password="pw", check_password=False)
    return job


@pytest.mark.parametrize("width", [1440, 390])
def test_a_hung_jobs_page_names_the_rank_and_node(chromium, live_server, hung, width):  # noqa: ANN001
    context = chromium.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    seen = watch(page, live_server.url)
    sign_in(page, live_server.url, "oli", "pw")
    page.set_viewport_size({"width": width, "height": 1000})
    page.goto(f"{live_server.url}/jobs/{hung.pk}/")
    section = page.locator("section[aria-labelledby=ranks-h]")
    section.locator(".rank-grid").wait_for()
    # While ranks report a stall, who the hang waits on comes first on the page.
    assert page.locator("section.card").first.get_attribute("aria-labelledby") == "ranks-h"
    said = section.locator(".verdict").inner_text()
    culprit_rank = HOSTS.index(CULPRIT) * 8
    assert f"rank {culprit_rank} on {CULPRIT}" in said and "load_batch" in said
    assert "127 ranks wait in all_reduce at step 41\u202f216" in said  # never wrapped inside
    assert section.locator(".verdict code").all_inner_texts() == ["load_batch", "all_reduce"]
    assert section.locator(".rank-grid .rank").count() == 128
    assert section.locator(".rank-grid .rank-outside").count() == 1
    assert section.locator(".rank-grid .rank-waiting").count() == 127
    outside = section.locator(".rank-grid .rank-outside")
    assert (
        outside.get_attribute("title")
        == f"rank {culprit_rank} on {CULPRIT}: outside the collective"
    )
    stacks = section.locator("pre.stack")
    assert stacks.count() == 2
    assert "all_reduce" in stacks.nth(0).inner_text()
    assert "load_batch" in stacks.nth(1).inner_text()
    assert section.locator(f"h3 >> text=Rank {culprit_rank} on").count() == 1
    shots = os.environ.get("KUAE_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        section.scroll_into_view_if_needed()
        page.screenshot(path=f"{shots}/job-hung-{width}.png", full_page=True)
    scroll, inner = page.evaluate(WIDE)
    assert scroll <= inner, f"the page scrolls sideways at {width} px"
    seen.assert_clean()
    context.close()
