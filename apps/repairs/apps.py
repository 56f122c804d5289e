"""The repairs app: a node's road back to service (docs/repairs.md)."""

from django.apps import AppConfig


class RepairsConfig(AppConfig):
    """Repairs: opened when a node is drained or taken down (read from the fleet's state
    history), worked through steps, returned through burn-in."""

    name = "apps.repairs"
    label = "repairs"
