"""Test helpers: HTTP servers on loopback, a real dcgm-exporter stand-in, free ports,
shared data."""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from django.core.management import call_command
from django.db import connection

# The team's real-world samples, kept in the repository (tests/data/README.md says where
# each comes from), so a clone tests on its own.
SHARED = Path(__file__).resolve().parent / "data"
DCGM_SAMPLE = SHARED / "dcgm" / "h100-node.prom"


SECRET = b"root:x:0:0:root:/root:/bin/bash\nDB_PASSWORD=hunter2-not-for-readers\n"
MIB = 1024 * 1024


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A request handler that logs nothing, and says nothing when the client hangs up before
    the answer is written (some tests' clients give up early on purpose)."""

    def handle(self) -> None:
        """Serve the connection; a client gone mid-answer ends it quietly."""
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def log_message(self, *args: object) -> None:
        """Log nothing."""


def reply(
    handler: http.server.BaseHTTPRequestHandler,
    status: int,
    body: bytes = b"",
    content_type: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> None:
    """Answer `status` with `body`: its Content-Type if given, `headers`, its Content-Length."""
    handler.send_response(status)
    if content_type is not None:
        handler.send_header("Content-Type", content_type)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if body:
        handler.wfile.write(body)


class LoopbackServer:
    """A threaded HTTP server serving `handler` on a free loopback port, from a daemon thread,
    until `close()` (or the end of a `with` block): `port`, `address` (host:port), `url`."""

    def __init__(
        self, handler: type[http.server.BaseHTTPRequestHandler], *, poll_interval: float = 0.5
    ) -> None:
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port: int = self.server.server_address[1]
        self.address = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.address}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": poll_interval}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        """Stop serving and release the port."""
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


@functools.cache
def gzip_bomb() -> bytes:
    """100 MiB of zeros, gzipped to ~100 KB."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as f:
        block = bytes(MIB)
        for _ in range(100):
            f.write(block)
    return out.getvalue()


class _Exporter(QuietHandler):
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
            bomb = self.path == "/bomb"
            return reply(
                self,
                500 if self.path == "/leak500" else 200,
                gzip_bomb() if bomb else SECRET,
                "text/plain",
                {"Content-Encoding": "gzip"} if bomb else None,
            )
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
        reply(self, 200, body, "text/plain; version=0.0.4")


def side_by_side(send: Callable[[Any], Any], batches: Sequence[Any]) -> list[Any]:
    """`send(batch)` for each batch at once, a thread each (named "earlier", "later", …),
    each closing its own database connection; what each answered, or the exception it
    raised (for the race tests: two intakes writing the same row)."""
    results: list[Any] = [None] * len(batches)

    def run(i: int) -> None:
        try:
            results[i] = send(batches[i])
        except Exception as exc:  # noqa: BLE001 — the caller's assertion shows it
            results[i] = exc
        finally:
            connection.close()

    names = ("earlier", "later", *(f"writer{i}" for i in range(2, len(batches))))
    threads = [threading.Thread(target=run, args=(i,), name=names[i]) for i in range(len(batches))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ExporterServer(LoopbackServer):
    """`_Exporter` on a free loopback port."""

    def __init__(self) -> None:
        super().__init__(_Exporter)
        self.server.hits = []  # type: ignore[attr-defined]
        self.server.sent = 0  # type: ignore[attr-defined]


class _Text(QuietHandler):
    def do_GET(self) -> None:  # noqa: N802
        body = self.server.text.encode()  # type: ignore[attr-defined]
        reply(self, 200, body, "text/plain; version=0.0.4")


class TextExporter(LoopbackServer):
    """An exporter answering every GET with `text` (Prometheus's text format), which a test
    changes between scrapes."""

    def __init__(self, text: str = "") -> None:
        super().__init__(_Text)
        self.text = text

    @property
    def text(self) -> str:
        """What it answers now."""
        return self.server.text  # type: ignore[attr-defined,no-any-return]

    @text.setter
    def text(self, value: str) -> None:
        self.server.text = value  # type: ignore[attr-defined]


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


@dataclass(frozen=True)
class GridTile:
    """A node tile as an operator sees it: sent as a link, or drawn by the page's script."""

    host: str
    classes: str
    title: str
    href: str
    drawn: bool


_RACK = re.compile(r'<div class="rack"(?: data-hosts="([^"]*)" data-tiles="([^"]*)")?>(.*?)</div>')
_SENT = re.compile(r'<a class="([^"]*)" href="([^"]*)" title="([^"]*)">')


def grid_tiles(html: str) -> list[GridTile]:
    """Every tile of a page's node grids (docs/pages.md, Node grids), in order: those sent as
    links as they are, and those the page's script draws from a rack's hostlist and
    characters with the page's words (static/js/app.js's drawRack, in Python)."""
    from apps.common.hostnames import Hostlists

    found = re.search(r'data-tile-words="([^"]*)"', html)
    words = json.loads(unescape(found.group(1))) if found else {}
    out: list[GridTile] = []
    for hosts, codes, body in _RACK.findall(html):
        sent = [
            GridTile(hostname_of(href), unescape(c), unescape(t), href, drawn=False)
            for c, href, t in _SENT.findall(body)
        ]
        if not hosts:
            out += sent
            continue
        names = Hostlists().expand(hosts)
        expanded = re.sub(r"(\d+)(\D)", lambda m: m.group(2) * int(m.group(1)), codes)
        for name, code in zip(names, expanded, strict=True):
            if code == "!":
                out.append(sent.pop(0))
                continue
            busy, stale = code == "+", words.get("unverified", "")
            classes = "tile state-healthy" + (" busy" if busy else "")
            classes += " unverified" if stale else ""
            title = f"{name} · {words['healthy']}" + (words["in_job"] if busy else "")
            title += f" · {stale}" if stale else ""
            out.append(GridTile(name, classes, title, f"{words['prefix']}{name}/", drawn=True))
    return out


def hostname_of(href: str) -> str:
    """`/nodes/r001n03/` → `r001n03`."""
    return href.rstrip("/").rsplit("/", 1)[-1]


_COMPONENT = re.compile(
    r'data-component="([^"]+)"|<script id="quiet-[\w-]+" type="application/json">(.*?)</script>'
)


def topology_components(html: str) -> dict[str, str]:
    """The topology page's components in page order, each key (`switch:leaf-07`) → "shown"
    (drawn by the server) or "quiet" (in its kind's closed line, drawn by the page's script
    when opened: docs/pages.md, Node grids)."""
    out: dict[str, str] = {}
    for key, data in _COMPONENT.findall(html):
        if key:
            out[key] = "shown"
            continue
        quiet = json.loads(data)
        for name, *_ in quiet["rows"]:
            out[f"{quiet['kind']}:{name}"] = "quiet"
    return out


def topology_quiet_lines(html: str) -> list[str]:
    """The lines of counts the topology page's quiet components share (their heads' HTML)."""
    return [
        line
        for data in re.findall(
            r'<script id="quiet-[\w-]+" type="application/json">(.*?)</script>', html
        )
        for _, line in json.loads(data)["heads"]
    ]
