"""The telemetry app: everything measured on the fleet's GPUs, ports and nodes."""

from __future__ import annotations

from django.apps import AppConfig


class TelemetryConfig(AppConfig):
    """Telemetry (docs/architecture.md): intake (JSON and Prometheus text), pull-mode
    scraping, the cluster's Prometheus as a source, events (XIDs, counters, ports, ranks),
    5-minute rollups, per-GPU history and charts."""

    name = "apps.telemetry"
    label = "telemetry"

    def ready(self) -> None:
        from apps.telemetry import monitored  # noqa: F401 - registry, checked at start-up
        from apps.telemetry.panels import panels_lend

        # The node page (fleet) shows its GPUs' telemetry and events without knowing them.
        panels_lend()
