"""Every write of telemetry: samples posted or scraped (`samples`), events from nodes'
kernel logs (`events`), pull-mode scraping (`scrape`), retention of rollups (`retention`)."""

from apps.telemetry.services.events import EventIngestResult, events_ingest
from apps.telemetry.services.retention import rollups_prune
from apps.telemetry.services.samples import IngestResult, telemetry_ingest
from apps.telemetry.services.scrape import scrape_nodes

__all__ = [
    "EventIngestResult",
    "IngestResult",
    "events_ingest",
    "rollups_prune",
    "scrape_nodes",
    "telemetry_ingest",
]
