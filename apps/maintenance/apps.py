"""The maintenance app: planned work on nodes, racks and hostlists (docs/maintenance.md)."""

from django.apps import AppConfig


class MaintenanceConfig(AppConfig):
    """Maintenance windows: booked ahead or now, they put their nodes in `maintenance`,
    keep checks and alerts quiet on them and record the jobs they stop as planned."""

    name = "apps.maintenance"
    label = "maintenance"

    def ready(self) -> None:
        from apps.incidents import silences
        from apps.maintenance.panels import panels_lend
        from apps.maintenance.services import alerts_silence

        # The Alertmanager intake (incidents) knows no window: it asks this app, which
        # keeps an alert on the window covering its node (docs/architecture.md, Readers lent
        # downwards).
        silences.lend(silence=alerts_silence)
        # The node page (fleet) and the overview (reports) show windows without knowing them.
        panels_lend()
