"""What an actuation asks of the scheduler and where it stands, with its colours
(docs/slurm.md, Actuation; docs/pages.md, Colours). Whether a cluster's actuation is on is the
cluster's own setting (`fleet.choices.ActuationMode`)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from apps.common.choices import ColouredChoices, Hue, css_prefix


class ActuationAction(models.TextChoices):
    """What an actuation asks of the scheduler."""

    DRAIN = "drain", _("Drain")
    RESUME = "resume", _("Resume")


@css_prefix("act")
class ActuationResult(ColouredChoices):
    """Where an actuation stands: pending until the scheduler took it (or refused it)."""

    PENDING = "pending", pgettext_lazy("actuation result", "Pending")
    DONE = "done", pgettext_lazy("actuation result", "Done")
    FAILED = "failed", pgettext_lazy("actuation result", "Failed")
    SKIPPED = "skipped", pgettext_lazy("actuation result", "Skipped")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {
            "pending": Hue.AMBER,
            "done": Hue.GREEN,
            "failed": Hue.RED,
            "skipped": Hue.STEEL,
        }
