"""Where a repair stands and what was done to a node (docs/repairs.md)."""

from __future__ import annotations

from django.db import models

from apps.common.choices import ColouredChoices, Hue, css_prefix
from apps.fleet.choices import NodeState


@css_prefix("repair")
class RepairStatus(ColouredChoices):
    """open (being worked) → burn_in (returned, waiting for a passing probe) → closed."""

    OPEN = "open", "Open"
    BURN_IN = "burn_in", "Burn-in"
    CLOSED = "closed", "Closed"

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {"open": Hue.ORANGE, "burn_in": Hue.AMBER, "closed": Hue.GREEN}


class RepairAction(models.TextChoices):
    """One step of a repair."""

    RESET_GPU = "reset_gpu", "GPU reset"
    REBOOT = "reboot", "Reboot"
    RESEAT = "reseat", "Reseat"
    REPLACE_GPU = "replace_gpu", "Replace GPU"
    REPLACE_NODE = "replace_node", "Replace node"
    RMA = "rma", "RMA"
    OTHER = "other", "Other"


class Closure(models.TextChoices):
    """How a repair closed."""

    BURN_IN = "burn_in", "Passed burn-in"
    SKIPPED = "skipped", "Returned without burn-in"
    OUTSIDE = "outside", "Returned to service outside the repair"


LIVE = (RepairStatus.OPEN, RepairStatus.BURN_IN)  # a repair not closed yet
# A node put back in one of these states by anyone but this app closes its repair.
IN_SERVICE = (NodeState.HEALTHY, NodeState.SUSPECT)

# A node with this many repairs opened within REPEAT_DAYS is a repeat offender.
REPEAT_REPAIRS = 3
REPEAT_DAYS = 30
