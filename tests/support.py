"""Test helpers: a real dcgm-exporter stand-in on loopback, free ports, shared data."""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import socket
import threading
import time
from pathlib import Path

from django.core.management import call_command

# The team's real-world samples, kept in the repository (tests/data/README.md says where
# each comes from), so a clone tests on its own.
SHARED = Path(__file__).resolve().parent / "data"
DCGM_SAMPLE = SHARED / "dcgm" / "h100-node.prom"


SECRET = b"root:x:0:0:root:/root:/bin/bash\nDB_PASSWORD=hunter2-not-for-readers\n"
MIB = 1024 * 1024


@functools.cache
def gzip_bomb() -> bytes:
    """100 MiB of zeros, gzipped to ~100 KB."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as f:
        block = bytes(MIB)
        for _ in range(100):
            f.write(block)
    return out.getvalue()


class _Exporter(http.server.BaseHTTPRequestHandler):
    """Serves the real dcgm-exporter sample at /metrics; /slow never answers in time.

    Hostile exporters too: /drip (a byte a second), /bomb (a gzip bomb), /huge (400 MiB,
    declared), /endless (400 MiB, undeclared), /leak and /leak500 (a secret, not metrics).
    Every request's path is kept in `server.hits`; bytes of body written in `server.sent`."""

    def _stream(self, total: int, *, declare: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        if declare:
            self.send_header("Content-Length", str(total))
        self.end_headers()
        line = b'DCGM_FI_DEV_GPU_TEMP{gpu="0"} 55\n' * 2048
        try:
            while self.server.sent < total:  # type: ignore[attr-defined]
                self.wfile.write(line)
                self.server.sent += len(line)  # type: ignore[attr-defined]
        except OSError:
            pass  # the scraper hung up, as it should

    def _drip(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        try:
            for _ in range(60):
                self.wfile.write(b"#")
                self.wfile.flush()
                time.sleep(1)
        except OSError:
            pass

    def do_GET(self) -> None:  # noqa: N802
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        if self.path == "/drip":
            return self._drip()
        if self.path in ("/huge", "/endless"):
            return self._stream(400 * MIB, declare=self.path == "/huge")
        if self.path in ("/bomb", "/leak", "/leak500"):
            body = gzip_bomb() if self.path == "/bomb" else SECRET
            self.send_response(500 if self.path == "/leak500" else 200)
            self.send_header("Content-Type", "text/plain")
            if self.path == "/bomb":
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return None
        if self.path == "/slow":
            threading.Event().wait(3)
        if self.path == "/broken":
            body = b'DCGM_FI_DEV_GPU_TEMP{gpu="0" 55\n'
        else:
            body = DCGM_SAMPLE.read_bytes()
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


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ExporterServer:
    """A threaded HTTP server serving `_Exporter` on a free loopback port."""

    def __init__(self) -> None:
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Exporter)
        self.server.hits = []  # type: ignore[attr-defined]
        self.server.sent = 0  # type: ignore[attr-defined]
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()


def simulate(**options: object) -> None:
    """Run `manage.py simulate` quietly (gpus, days, seed, failure_rate …)."""
    call_command("simulate", stdout=io.StringIO(), stderr=io.StringIO(), **options)


def heartbeating_fleet(cluster, api, *, count: int, prefix: str, per_rack: int, rack: str) -> dict:  # noqa: ANN001
    """`count` nodes in racks of `per_rack`, in service for ten days, a running 70B job on
    the first four, and every node's heartbeat posted by the agent persona (the health and
    maintenance tests' cluster)."""
    import datetime as dt

    from django.utils import timezone

    from apps.fleet.services import NodeSpec, nodes_register
    from apps.jobs.services import job_create

    start = timezone.now() - dt.timedelta(days=10)
    nodes = nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(
                hostname=f"{prefix}{i:02d}", rack=f"{rack}{i // per_rack}", in_service_at=start
            )
            for i in range(count)
        ],
    )
    job, _ = job_create(
        cluster=cluster,
        nodes=nodes[:4],
        name="train-70b",
        n_params=70e9,
        gpu_count=32,
        status="running",
        started_at=timezone.now() - dt.timedelta(hours=5),
    )
    agent = api("ada")
    for node in nodes:
        answer = agent.post(f"/api/v1/nodes/{node.hostname}/heartbeat/", {}, format="json")
        assert answer.status_code == 204
    return {"nodes": nodes, "job": job, "agent": agent}
