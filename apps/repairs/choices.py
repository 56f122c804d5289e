"""Where a repair stands and what was done to a node (docs/repairs.md)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from apps.common.choices import ColouredChoices, Hue, css_prefix
from apps.fleet.choices import NodeState


@css_prefix("repair")
class RepairStatus(ColouredChoices):
    """open (being worked) → burn_in (returned, waiting for a passing probe) → closed."""

    OPEN = "open", _("Open")
    BURN_IN = "burn_in", _("Burn-in")
    CLOSED = "closed", _("Closed")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {"open": Hue.ORANGE, "burn_in": Hue.AMBER, "closed": Hue.GREEN}


class RepairAction(models.TextChoices):
    """One step of a repair."""

    RESET_GPU = "reset_gpu", _("GPU reset")
    REBOOT = "reboot", _("Reboot")
    RESEAT = "reseat", _("Reseat")
    REPLACE_GPU = "replace_gpu", _("Replace GPU")
    REPLACE_NODE = "replace_node", _("Replace node")
    RMA = "rma", _("RMA")
    OTHER = "other", _("Other")


class Closure(models.TextChoices):
    """How a repair closed."""

    BURN_IN = "burn_in", _("Passed burn-in")
    SKIPPED = "skipped", _("Returned without burn-in")
    OUTSIDE = "outside", _("Returned to service outside the repair")


LIVE = (RepairStatus.OPEN, RepairStatus.BURN_IN)  # a repair not closed yet
# A node put back in one of these states by anyone but this app closes its repair.
IN_SERVICE = (NodeState.HEALTHY, NodeState.SUSPECT)

# A node with this many repairs opened within REPEAT_DAYS is a repeat offender.
REPEAT_REPAIRS = 3
REPEAT_DAYS = 30
