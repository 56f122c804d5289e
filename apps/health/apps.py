"""The health app: check plug-ins (`apps.health.checks`), runs, results, thresholds."""

from __future__ import annotations

from django.apps import AppConfig


class HealthConfig(AppConfig):
    name = "apps.health"
    label = "health"

    def ready(self) -> None:
        """Lend telemetry what the checks need of it (`apps.telemetry.monitored`), the node
        page (fleet) its check results, the job page (jobs) its nodes ranked by suspicion,
        and the alerts out (incidents) the watchdog."""
        from apps.health.alert_watchdog import watchdog_alerts
        from apps.health.checks import lend_to_telemetry
        from apps.health.panels import panels_lend
        from apps.incidents.alerts_out import producer_add

        lend_to_telemetry()
        panels_lend()
        producer_add(name="health.watchdog", producer=watchdog_alerts)
