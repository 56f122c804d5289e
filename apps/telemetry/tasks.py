"""Telemetry's background work: pull-mode scrape rounds, rollup retention. Thin: call
services."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from apps.common.heartbeats import heartbeats_record
from apps.fleet.models import Node
from apps.telemetry.services import events_prune, rollups_prune, scrape_nodes

CHUNK = 64


@shared_task(name="apps.telemetry.tasks.scrape_round", ignore_result=True)
def scrape_round() -> int:
    """Fan a scrape round out in chunks of nodes that have an exporter; returns chunk count."""
    ids = list(Node.objects.exclude(exporter_url="").order_by("pk").values_list("pk", flat=True))
    chunks = [ids[i : i + CHUNK] for i in range(0, len(ids), CHUNK)]
    for chunk in chunks:
        # expires: a chunk still queued when the next round starts is dropped, not piled up
        scrape_chunk.apply_async((chunk,), expires=settings.KUAE_SCRAPE_INTERVAL)
    if chunks:  # the `scraper` part (docs/operations.md, Watching the watcher)
        heartbeats_record(["scraper"])
    return len(chunks)


@shared_task(name="apps.telemetry.tasks.scrape_chunk", ignore_result=True)
def scrape_chunk(node_ids: list[int]) -> dict[str, int]:
    """Scrape one chunk of exporters and store the samples."""
    return scrape_nodes(node_ids=node_ids, timeout_s=settings.KUAE_SCRAPE_TIMEOUT)


@shared_task(name="apps.telemetry.tasks.prune_rollups", ignore_result=True)
def prune_rollups() -> int:
    """Delete rollups past the retention age."""
    return rollups_prune(older_than_days=settings.KUAE_RETAIN_ROLLUP_DAYS)


# The names these tasks had while they were the fleet's (`apps.fleet.tasks.*`). A message
# queued under one before an upgrade — by the old beat, or waiting in the broker — still
# finds a task when a new worker takes it, rather than being dropped as unregistered. Only
# an old beat sends them, so nothing routes them: they arrive on the queue they were sent to.
@shared_task(name="apps.fleet.tasks.scrape_round", ignore_result=True)
def fleet_scrape_round() -> int:
    """`scrape_round` under its old name."""
    return scrape_round()


@shared_task(name="apps.fleet.tasks.scrape_chunk", ignore_result=True)
def fleet_scrape_chunk(node_ids: list[int]) -> dict[str, int]:
    """`scrape_chunk` under its old name."""
    return scrape_chunk(node_ids)


@shared_task(name="apps.fleet.tasks.prune_rollups", ignore_result=True)
def fleet_prune_rollups() -> int:
    """`prune_rollups` under its old name."""
    return prune_rollups()


@shared_task(name="apps.telemetry.tasks.prune_events", ignore_result=True)
def prune_events() -> int:
    """Delete telemetry events past the retention age."""
    return events_prune(older_than_days=settings.KUAE_RETAIN_EVENTS_DAYS)
