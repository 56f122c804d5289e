"""The health app: check plug-ins (`apps.health.checks`), runs, results, thresholds."""

from __future__ import annotations

from django.apps import AppConfig


class HealthConfig(AppConfig):
    name = "apps.health"
    label = "health"

    def ready(self) -> None:
        """Lend telemetry what the checks need of it (`apps.telemetry.monitored`), and the
        node page (fleet) its check results."""
        from apps.health.checks import lend_to_telemetry
        from apps.health.panels import panels_lend

        lend_to_telemetry()
        panels_lend()
