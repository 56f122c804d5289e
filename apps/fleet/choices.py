"""Node states and their colours (UI.md: one colour per state, everywhere)."""

from __future__ import annotations

from apps.common.choices import ColouredChoices, Hue, css_prefix


@css_prefix("state")
class NodeState(ColouredChoices):
    """A node's service state; availability (CONTRACT §4.3) counts healthy and suspect."""

    HEALTHY = "healthy", "Healthy"
    SUSPECT = "suspect", "Suspect"
    DRAINED = "drained", "Drained"
    DOWN = "down", "Down"
    MAINTENANCE = "maintenance", "Maintenance"

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {
            "healthy": Hue.GREEN,
            "suspect": Hue.AMBER,
            "drained": Hue.ORANGE,
            "down": Hue.RED,
            "maintenance": Hue.STEEL,
        }


AVAILABLE_STATES = frozenset({NodeState.HEALTHY, NodeState.SUSPECT})


class StateSource:
    """Who changed a node's state: shown beside the reason in its history."""

    USER = "user"
    CHECK = "check"
    IMPORT = "import"
    SIMULATOR = "simulator"
