"""The repairs app: a node's road back to service (docs/repairs.md)."""

from django.apps import AppConfig


class RepairsConfig(AppConfig):
    """Repairs: opened when a node is drained or taken down (read from the fleet's state
    history), worked through steps, returned through burn-in."""

    name = "apps.repairs"
    label = "repairs"

    def ready(self) -> None:
        from apps.repairs.panels import panels_lend

        # The node page (fleet) and the reliability page (reports) show repairs without
        # knowing them (docs/repairs.md).
        panels_lend()
