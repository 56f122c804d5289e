"""Every write of telemetry: samples posted or scraped (`samples`), events from nodes'
kernel logs (`events`), NIC ports' readings (`ports`), host readings (`host`) and
the readings the fabric check judged (`port_judged`), pull-mode scraping (`scrape`),
retention of rollups (`retention`)."""

from apps.telemetry.services.events import EventIngestResult, events_ingest
from apps.telemetry.services.host import HostIngestResult, host_ingest, telemetry_batch_ingest
from apps.telemetry.services.port_judged import Judged, ports_judged
from apps.telemetry.services.ports import (
    PortIngestResult,
    ports_ingest,
    telemetry_with_ports_ingest,
)
from apps.telemetry.services.retention import events_prune, rollups_prune
from apps.telemetry.services.samples import IngestResult, telemetry_ingest
from apps.telemetry.services.scrape import scrape_nodes

__all__ = [
    "EventIngestResult",
    "HostIngestResult",
    "IngestResult",
    "Judged",
    "PortIngestResult",
    "events_ingest",
    "host_ingest",
    "ports_ingest",
    "ports_judged",
    "events_prune",
    "rollups_prune",
    "scrape_nodes",
    "telemetry_batch_ingest",
    "telemetry_ingest",
    "telemetry_with_ports_ingest",
]
