"""A job's page lists its nodes a page at a time, those not healthy first, so a job on
thousands of nodes is not one page of thousands of chips (measured by tests/bench/scale.py:
the 9,600-node flagship's page took 297 ms, 51 ms now), in the same queries whatever
the job's size."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.fleet.services import NodeSpec, node_set_state, nodes_register
from apps.health.pipeline import CACHE_KEY as PIPELINE_CACHE_KEY
from apps.jobs.models import Job
from apps.jobs.services import job_create
from apps.jobs.views import NODES_PER_PAGE

pytestmark = pytest.mark.django_db

CHIP = re.compile(r'<a class="chip state-(\w+)" href="/nodes/([\w.-]+)/"')


def _job(cluster, count: int, prefix: str) -> Job:  # noqa: ANN001
    start = timezone.now() - dt.timedelta(days=3)
    nodes = nodes_register(
        cluster=cluster,
        specs=[NodeSpec(hostname=f"{prefix}{i:04d}", in_service_at=start) for i in range(count)],
    )
    job, _ = job_create(
        cluster=cluster,
        nodes=nodes,
        name=f"run-{prefix}",
        gpu_count=8 * count,
        status="running",
        started_at=start,
    )
    return job


def _page(client, users, job: Job, query: str = "") -> tuple[str, int]:  # noqa: ANN001
    client.force_login(users["otto"])
    # Each counted page reads the pipeline banner's status itself: cached 10 s (2 s while
    # stale, as it is here), a cached read or not depends on how slow the machine is.
    cache.delete(PIPELINE_CACHE_KEY)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/jobs/{job.pk}/{query}")
    assert response.status_code == 200
    return response.content.decode(), len(queries)


def test_a_large_job_shows_its_nodes_a_page_at_a_time_unhealthy_first(client, users, cluster):
    job = _job(cluster, NODES_PER_PAGE + 44, "big")
    for hostname, state in (("big0290", "down"), ("big0007", "drained")):
        node = job.nodes.get(hostname=hostname)
        node_set_state(node=node, state=state, reason="test")
    html, _ = _page(client, users, job)
    chips = CHIP.findall(html)
    assert len(chips) == NODES_PER_PAGE
    assert chips[:3] == [("drained", "big0007"), ("down", "big0290"), ("healthy", "big0000")]
    assert "on 300 nodes" in html and "those not healthy first" in html
    assert f"Nodes 1–{NODES_PER_PAGE} of 300" in html and 'href="?nodes=2#nodes-h"' in html

    rest, _ = _page(client, users, job, "?nodes=2")
    chips = CHIP.findall(rest)
    assert len(chips) == 300 - NODES_PER_PAGE and chips[-1] == ("healthy", "big0299")
    assert 'href="?nodes=1#nodes-h"' in rest and "?nodes=3" not in rest
    junk, _ = _page(client, users, job, "?nodes=junk")  # not a number: the first page
    assert CHIP.findall(junk)[0] == ("drained", "big0007")


def test_a_small_job_is_one_page_without_a_pager_in_the_same_queries(client, users, cluster):
    small = _job(cluster, 3, "small")
    html, small_queries = _page(client, users, small)
    assert [h for _, h in CHIP.findall(html)] == ["small0000", "small0001", "small0002"]
    assert 'aria-label="Pages of nodes"' not in html and "those not healthy first" not in html
    many = _job(cluster, NODES_PER_PAGE * 3, "many")
    _, big_queries = _page(client, users, many)
    assert big_queries == small_queries
