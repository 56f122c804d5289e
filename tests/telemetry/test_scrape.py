"""Pull mode against real HTTP servers on loopback, and retention."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import GPU, Node
from apps.fleet.services import NodeSpec, nodes_register
from apps.telemetry.models import NodeRollup
from apps.telemetry.services import rollups_prune, scrape_nodes
from apps.telemetry.tasks import scrape_round
from tests.support import closed_port

pytestmark = pytest.mark.django_db


def test_scrape_stores_samples_and_marks_targets(cluster, exporter):
    specs = [
        NodeSpec(hostname="gpu-a017", exporter_url=f"{exporter}/metrics"),
        NodeSpec(hostname="dead", exporter_url=f"http://127.0.0.1:{closed_port()}/metrics"),
        NodeSpec(hostname="slow", exporter_url=f"{exporter}/slow"),
        NodeSpec(hostname="broken", exporter_url=f"{exporter}/broken"),
        NodeSpec(hostname="missing", exporter_url=f"{exporter}/missing"),
        NodeSpec(hostname="no-exporter"),
    ]
    nodes = nodes_register(cluster=cluster, specs=specs)
    result = scrape_nodes(node_ids=[n.pk for n in nodes], timeout_s=1.0)
    assert result == {"targets": 5, "up": 1, "samples": 8, "ports": 0, "host": 0}
    state = {
        n.hostname: (n.scrape_ok, n.scrape_error) for n in Node.objects.exclude(exporter_url="")
    }
    assert state["gpu-a017"] == (True, "")
    assert state["dead"][0] is False and "Connect" in state["dead"][1]
    assert state["slow"] == (False, "timeout")
    assert state["broken"][0] is False and "line 1" in state["broken"][1]
    assert state["missing"] == (False, "HTTP 404")
    gpu = GPU.objects.get(node__hostname="gpu-a017", index=5)
    assert gpu.metrics["sm_clock_mhz"] == 1980 and gpu.uuid.startswith("GPU-")
    # The sample labels its host gpu-a017, but the scraper files it under the node it scraped.
    assert NodeRollup.objects.filter(node__hostname="gpu-a017").count() == 1


def test_a_node_with_too_few_gpus_does_not_keep_others_out(cluster, exporter):
    nodes = nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(hostname="gpu-a017", exporter_url=f"{exporter}/metrics"),
            NodeSpec(hostname="small", exporter_url=f"{exporter}/metrics", gpu_count=4),
        ],
    )
    result = scrape_nodes(node_ids=[n.pk for n in nodes])
    assert result["samples"] == 8
    small = Node.objects.get(hostname="small")
    assert small.scrape_ok is False and "has no GPU" in small.scrape_error


def test_scrape_round_fans_out_chunks(cluster, exporter):
    from kuaeweb.celery import app

    app.conf.task_always_eager = True
    try:
        nodes_register(
            cluster=cluster,
            specs=[
                NodeSpec(hostname=f"n{i:03d}", exporter_url=f"{exporter}/metrics")
                for i in range(70)
            ],
        )
        assert scrape_round() == 2  # 64 + 6
    finally:
        app.conf.task_always_eager = False
    assert Node.objects.filter(scrape_ok=True).count() == 70


def test_rollup_retention(nodes):
    now = timezone.now()
    for days in (1, 29, 31, 90):
        NodeRollup.objects.create(node=nodes[0], bucket=now - dt.timedelta(days=days))
    assert rollups_prune(older_than_days=30, now=now) == 2
    assert NodeRollup.objects.count() == 2
