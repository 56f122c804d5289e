"""Pull mode: scrape nodes' exporters, as Prometheus would, and ingest what they say: a
dcgm-exporter's per-GPU samples, and a node_exporter's `node_infiniband_*` series as the
scraped node's NIC ports and its host series (EDAC, filesystems, the clock) as the node's
host readings (docs/integrations.md, 2c. Pull mode: KUAE scrapes the exporters).

An exporter is answered by a node that runs users' code, so the scraper trusts nothing it
says or where its URL points:

- it connects only where KUAE_SCRAPE_ALLOW lets it (apps.fleet.destinations): it resolves
  the name itself, checks every address and connects to a checked one — no second lookup
  a rebinding DNS server could answer differently, no proxy from the environment
  (apps.fleet.pinned.PinnedBackend, as every pinned client);
- one deadline covers the whole scrape of a target (name lookup, connect, TLS, headers,
  body; the same backend's deadline): a server that drips a byte a second is cut off at
  `timeout_s`;
- the answer is streamed and refused past MAX_BYTES, counted before and after
  decompression (a declared Content-Length over it is refused before the body is read),
  and past MAX_LINES before it is parsed;
- a scrape error is in the scraper's own words — a status code, "timeout", a line number —
  never the answer's bytes (readers see it on the node's page).
"""

from __future__ import annotations

import datetime as dt
import logging
import ssl
import time
import zlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpcore
import httpx
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.common.bulk import update_many
from apps.common.errors import BatchError
from apps.fleet.destinations import DestinationRefused, IPNetwork, Unresolvable, parse_allow
from apps.fleet.models import Node
from apps.fleet.pinned import PinnedBackend
from apps.telemetry.host import HostReadingIn
from apps.telemetry.intake import TelemetrySample
from apps.telemetry.ports import PortReading
from apps.telemetry.prometheus import ExpositionError, parse_exposition
from apps.telemetry.services.host import telemetry_batch_ingest

log = logging.getLogger(__name__)

MAX_BYTES = 8 * 1024 * 1024  # an 8-GPU dcgm-exporter answers ~50 KB in ~300 lines
MAX_LINES = 20_000  # parsing is the costly part: a line cap keeps it under a second
READ_BYTES = 64 * 1024
HEADERS = [
    (b"Accept", b"text/plain"),
    (b"Accept-Encoding", b"gzip"),
    (b"User-Agent", b"kuae-ops-scraper"),
]


@dataclass
class Scrape:
    """One target's outcome."""

    node_id: int
    hostname: str
    ms: float
    samples: list[TelemetrySample]
    ports: list[PortReading]
    host: list[HostReadingIn]
    error: str = ""

    @property
    def read(self) -> bool:
        """Whether the answer gave anything to store."""
        return bool(self.samples or self.ports or self.host)


class ScrapeFailed(Exception):
    """A scrape that failed, said in the scraper's words."""


class _Body:
    """The answer's bytes, decompressed as they arrive, refused past `limit` either way."""

    def __init__(self, encoding: bytes, limit: int) -> None:
        if encoding in (b"", b"identity"):
            self._inflate = None
        elif encoding in (b"gzip", b"x-gzip"):
            self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        else:
            raise ScrapeFailed("answer in a content encoding the scraper did not ask for")
        self.data, self._limit, self._raw = bytearray(), limit, 0

    def _room(self) -> int:
        return self._limit - len(self.data) + 1  # one past the limit shows it is over

    def _check(self) -> None:
        if len(self.data) > self._limit:
            raise ScrapeFailed(f"answer over {self._limit} bytes")

    def feed(self, chunk: bytes) -> None:
        """Add a chunk as read; decompression never produces more than the room left."""
        self._raw += len(chunk)
        if self._raw > self._limit:
            raise ScrapeFailed(f"answer over {self._limit} bytes")
        if self._inflate is None:
            self.data += chunk
            self._check()
            return
        try:
            while chunk:
                self.data += self._inflate.decompress(chunk, self._room())
                self._check()
                chunk = self._inflate.unconsumed_tail
                if self._inflate.eof:
                    rest = self._inflate.unused_data
                    self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)  # next member
                    chunk = rest if rest.strip(b"\0") else b""
        except zlib.error as exc:
            raise ScrapeFailed("answer is not valid gzip") from exc

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _get(pool: httpcore.ConnectionPool, url: str, timeout_s: float) -> str:
    """The exporter's answer as text; ScrapeFailed (or an httpcore error) otherwise."""
    timeouts = {"connect": timeout_s, "read": timeout_s, "write": timeout_s, "pool": timeout_s}
    with pool.stream("GET", url, headers=HEADERS, extensions={"timeout": timeouts}) as response:
        if response.status != 200:
            raise ScrapeFailed(f"HTTP {response.status}")
        headers = {name.lower(): value.strip().lower() for name, value in response.headers}
        length = headers.get(b"content-length", b"")
        if length.isdigit() and int(length) > MAX_BYTES:
            raise ScrapeFailed(f"answer over {MAX_BYTES} bytes")
        body = _Body(headers.get(b"content-encoding", b""), MAX_BYTES)
        for chunk in response.iter_stream():
            body.feed(chunk)
    return body.text()


def _describe(exc: BaseException) -> str:
    """The scraper's words for a failure: never text the exporter sent."""
    if isinstance(exc, ScrapeFailed):
        return str(exc)
    if isinstance(exc, DestinationRefused):
        return f"refused: {exc}"[:300]
    if isinstance(exc, Unresolvable):
        return "host does not resolve"
    if isinstance(exc, ExpositionError):
        return f"bad exposition text at line {exc.line}"
    if isinstance(exc, httpcore.TimeoutException):
        return "timeout"
    if isinstance(exc, httpcore.ConnectError):
        cause = exc.__context__
        if isinstance(cause, ssl.SSLError):
            return "ConnectError: TLS handshake failed"
        reason = getattr(cause, "strerror", None) if isinstance(cause, OSError) else None
        return f"ConnectError: {reason or 'cannot connect'}"
    if isinstance(exc, httpcore.ProtocolError):
        return "not an HTTP answer"
    if isinstance(exc, httpcore.NetworkError):
        return "connection broken"
    return f"scrape failed ({type(exc).__name__})"


_EXPECTED = (
    ScrapeFailed,
    DestinationRefused,
    Unresolvable,
    ExpositionError,
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
)


def _fetch(
    node_id: int,
    hostname: str,
    url: str,
    ts: dt.datetime,
    *,
    timeout_s: float,
    allow: Sequence[IPNetwork],
    ssl_context: ssl.SSLContext,
) -> Scrape:
    start = time.perf_counter()
    deadline = time.monotonic() + timeout_s
    samples: list[TelemetrySample] = []
    ports: list[PortReading] = []
    host: list[HostReadingIn] = []
    try:
        with httpcore.ConnectionPool(
            ssl_context=ssl_context,
            network_backend=PinnedBackend(allow, deadline),
            max_connections=1,
            retries=0,
        ) as pool:
            text = _get(pool, url, timeout_s)
        if text.count("\n") > MAX_LINES:
            raise ScrapeFailed(f"answer over {MAX_LINES} lines")
        # node_exporter carries no host label: its ports and host series are the scraped
        # node's.
        samples, ports, host = parse_exposition(text, ts=ts, node=hostname)
        error = (
            ""
            if samples or ports or host
            else "no per-GPU samples, NIC ports nor host readings in the answer"
        )
    except Exception as exc:  # every failure is this target's, never the round's
        if not isinstance(exc, _EXPECTED):
            log.exception("scrape of %s failed unexpectedly", hostname)
        error = _describe(exc)
    ms = (time.perf_counter() - start) * 1000
    return Scrape(node_id, hostname, ms, samples, ports, host, error)


def scrape_nodes(
    *, node_ids: Sequence[int], timeout_s: float = 5.0, workers: int = 16
) -> dict[str, int]:
    """Scrape the given nodes' exporters concurrently, store their samples, NIC ports'
    readings and host readings, and record each target's health (`scrape_ok`,
    `scrape_error`, `scrape_ms`). `timeout_s` bounds each target's whole scrape."""
    targets = list(
        Node.objects.filter(pk__in=list(node_ids))
        .exclude(exporter_url="")
        .values_list("pk", "hostname", "exporter_url")
    )
    if not targets:
        return {"targets": 0, "up": 0, "samples": 0, "ports": 0, "host": 0}
    now = timezone.now()
    allow = parse_allow(tuple(settings.KUAE_SCRAPE_ALLOW))
    ssl_context = httpx.create_ssl_context()
    with ThreadPoolExecutor(max_workers=min(workers, len(targets))) as pool:
        results = list(
            pool.map(
                lambda t: _fetch(
                    t[0], t[1], t[2], now, timeout_s=timeout_s, allow=allow, ssl_context=ssl_context
                ),
                targets,
            )
        )
    stored, ports, host = _store([r for r in results if r.read])
    with transaction.atomic():
        update_many(
            Node._meta.db_table,
            ("id",),
            ("scraped_at", "scrape_ok", "scrape_error", "scrape_ms"),
            [(r.node_id, now, not r.error, r.error, round(r.ms, 1)) for r in results],
        )
    up = sum(not r.error for r in results)
    return {"targets": len(results), "up": up, "samples": stored, "ports": ports, "host": host}


def _store(results: list[Scrape]) -> tuple[int, int, int]:
    """One intake for the whole chunk (samples, ports and host readings together); if the
    chunk is refused, node by node, so one bad exporter cannot keep the others' values out.
    Returns the samples, port readings and host readings applied."""
    if not results:
        return 0, 0, 0
    try:
        gpus, ports, host = telemetry_batch_ingest(
            samples=[s for r in results for s in r.samples],
            readings=[p for r in results for p in r.ports],
            host=[h for r in results for h in r.host],
        )
        return gpus.applied, ports.applied, host.applied
    except BatchError:
        pass
    stored = applied = hosts = 0
    for result in results:
        try:
            gpus, ports, host = telemetry_batch_ingest(
                samples=result.samples, readings=result.ports, host=result.host
            )
        except BatchError as exc:
            result.error = f"refused: {next(iter(exc.errors.values()))[0]}"[:300]
            continue
        stored += gpus.applied
        applied += ports.applied
        hosts += host.applied
    return stored, applied, hosts
