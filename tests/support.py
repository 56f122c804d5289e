"""Test helpers: a real dcgm-exporter stand-in on loopback, free ports, shared data."""

from __future__ import annotations

import http.server
import io
import socket
import threading
from pathlib import Path

from django.core.management import call_command

# Copies of ../shared/data (the team's real-world samples), so a clone tests on its own.
SHARED = Path(__file__).resolve().parent / "data"
DCGM_SAMPLE = SHARED / "dcgm" / "h100-node.prom"


class _Exporter(http.server.BaseHTTPRequestHandler):
    """Serves the real dcgm-exporter sample at /metrics; /slow never answers in time."""

    def do_GET(self) -> None:  # noqa: N802
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
