"""Pull mode: scrape nodes' dcgm-exporters, as Prometheus would, and ingest what they say."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
from django.db import transaction
from django.utils import timezone

from apps.common.bulk import update_many
from apps.common.errors import BatchError
from apps.fleet.intake import TelemetrySample
from apps.fleet.models import Node
from apps.fleet.prometheus import ExpositionError, parse_dcgm
from apps.fleet.services.telemetry import telemetry_ingest

MAX_BYTES = 8 * 1024 * 1024


@dataclass
class Scrape:
    """One target's outcome."""

    node_id: int
    hostname: str
    ms: float
    samples: list[TelemetrySample]
    error: str = ""


def _fetch(client: httpx.Client, node_id: int, hostname: str, url: str, ts: dt.datetime) -> Scrape:
    start = time.perf_counter()
    try:
        response = client.get(url, headers={"Accept": "text/plain"})
        response.raise_for_status()
        if len(response.content) > MAX_BYTES:
            raise ValueError(f"answer over {MAX_BYTES} bytes")
        samples = parse_dcgm(response.text, ts=ts, node=hostname)
        error = "" if samples else "no per-GPU samples in the answer"
    except (httpx.HTTPError, ValueError) as exc:  # ExpositionError is a ValueError
        samples, error = [], _describe(exc)
    return Scrape(node_id, hostname, (time.perf_counter() - start) * 1000, samples, error)


def _describe(exc: Exception) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    if isinstance(exc, ExpositionError):
        return f"bad exposition text, {exc}"
    return f"{type(exc).__name__}: {exc}"[:300]


def scrape_nodes(
    *, node_ids: Sequence[int], timeout_s: float = 5.0, workers: int = 16
) -> dict[str, int]:
    """Scrape the given nodes' exporters concurrently, store their samples, and record each
    target's health (`scrape_ok`, `scrape_error`, `scrape_ms`)."""
    targets = list(
        Node.objects.filter(pk__in=list(node_ids))
        .exclude(exporter_url="")
        .values_list("pk", "hostname", "exporter_url")
    )
    if not targets:
        return {"targets": 0, "up": 0, "samples": 0}
    now = timezone.now()
    limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)
    with (
        httpx.Client(timeout=timeout_s, limits=limits, follow_redirects=False) as client,
        ThreadPoolExecutor(max_workers=min(workers, len(targets))) as pool,
    ):
        results = list(pool.map(lambda t: _fetch(client, t[0], t[1], t[2], now), targets))
    stored = _store([r for r in results if r.samples])
    with transaction.atomic():
        update_many(
            Node._meta.db_table,
            ("id",),
            ("scraped_at", "scrape_ok", "scrape_error", "scrape_ms"),
            [(r.node_id, now, not r.error, r.error, round(r.ms, 1)) for r in results],
        )
    return {"targets": len(results), "up": sum(not r.error for r in results), "samples": stored}


def _store(results: list[Scrape]) -> int:
    """One intake for the whole chunk; if the chunk is refused, node by node, so one bad
    exporter cannot keep the others' samples out."""
    if not results:
        return 0
    try:
        return telemetry_ingest(samples=[s for r in results for s in r.samples]).applied
    except BatchError:
        pass
    stored = 0
    for result in results:
        try:
            stored += telemetry_ingest(samples=result.samples).applied
        except BatchError as exc:
            result.error = f"refused: {next(iter(exc.errors.values()))[0]}"[:300]
    return stored
