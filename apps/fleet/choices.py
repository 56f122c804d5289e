"""Node states and their colours (docs/pages.md, Colours: one colour per state)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from apps.common.choices import ColouredChoices, Hue, css_prefix


@css_prefix("state")
class NodeState(ColouredChoices):
    """A node's service state; availability (docs/formulas.md, GPU availability) counts healthy and
    suspect."""

    HEALTHY = "healthy", _("Healthy")
    SUSPECT = "suspect", _("Suspect")
    DRAINED = "drained", _("Drained")
    DOWN = "down", _("Down")
    MAINTENANCE = "maintenance", _("Maintenance")

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
    SLURM = "slurm"  # mirrored from a drain or down set in the scheduler (docs/slurm.md)
    MAINTENANCE = "maintenance"  # a maintenance window began or ended (docs/maintenance.md)


OUT_OF_SERVICE = frozenset({NodeState.DRAINED, NodeState.DOWN})


class ActuationMode(models.TextChoices):
    """Whether KUAE's drains and returns reach the scheduler (docs/slurm.md, Actuation)."""

    OFF = "off", _("Off")
    DRY_RUN = "dry_run", _("Dry run (recorded, not sent)")
    ON = "on", _("On")


class SchedulerKind(models.TextChoices):
    """How KUAE talks to a cluster's Slurm (docs/slurm.md, Connecting a cluster)."""

    CLI = "cli", "Slurm client commands"
    REST = "rest", "slurmrestd"
