"""Pull mode against real HTTP servers on loopback, and retention."""

from __future__ import annotations

import datetime as dt
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.utils import timezone

from apps.fleet.models import GPU, Node, NodeRollup
from apps.fleet.services import NodeSpec, nodes_register, rollups_prune, scrape_nodes
from apps.fleet.tasks import scrape_round

pytestmark = pytest.mark.django_db

SAMPLE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "dcgm" / "h100-node.prom"


class _Exporter(http.server.BaseHTTPRequestHandler):
    """Serves the real dcgm-exporter sample at /metrics; /slow never answers in time."""

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/slow":
            threading.Event().wait(3)
        if self.path == "/broken":
            body = b'DCGM_FI_DEV_GPU_TEMP{gpu="0" 55\n'
        else:
            body = SAMPLE.read_bytes()
        if self.path == "/missing":
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def exporter() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Exporter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_scrape_stores_samples_and_marks_targets(cluster, exporter):
    specs = [
        NodeSpec(hostname="gpu-a017", exporter_url=f"{exporter}/metrics"),
        NodeSpec(hostname="dead", exporter_url=f"http://127.0.0.1:{_closed_port()}/metrics"),
        NodeSpec(hostname="slow", exporter_url=f"{exporter}/slow"),
        NodeSpec(hostname="broken", exporter_url=f"{exporter}/broken"),
        NodeSpec(hostname="missing", exporter_url=f"{exporter}/missing"),
        NodeSpec(hostname="no-exporter"),
    ]
    nodes = nodes_register(cluster=cluster, specs=specs)
    result = scrape_nodes(node_ids=[n.pk for n in nodes], timeout_s=1.0)
    assert result == {"targets": 5, "up": 1, "samples": 8}
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
