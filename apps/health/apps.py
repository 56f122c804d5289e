"""The health app: check plug-ins (`apps.health.checks`), runs, results, thresholds."""

from __future__ import annotations

from django.apps import AppConfig


class HealthConfig(AppConfig):
    name = "apps.health"
    label = "health"

    def ready(self) -> None:
        """Lend the fleet what the checks need of its telemetry (`apps.fleet.monitored`)."""
        from apps.health.checks import lend_to_fleet

        lend_to_fleet()
