"""Where scheduled GPU-hours go (docs/formulas.md, Weekly effective training rate), with the colours
every report draws them in."""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.common.choices import ColouredChoices, Hue, css_prefix


@css_prefix("cause")
class GpuHours(ColouredChoices):
    """A share of a job's scheduled GPU-hours: productive, or lost to one of four causes
    (the `CAUSES` of `reports/effective.py`, in the same order)."""

    PRODUCTIVE = "productive", gettext_lazy("productive")
    DOWNTIME = "downtime", gettext_lazy("failure downtime")
    PLANNED = "planned", gettext_lazy("planned downtime")
    REWORK = "rework", gettext_lazy("rework since checkpoint")
    CHECKPOINT = "checkpoint", gettext_lazy("checkpoint blocking")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {
            "productive": Hue.GREEN,
            "downtime": Hue.RED,
            "planned": Hue.SLATE,
            "rework": Hue.ORANGE,
            "checkpoint": Hue.AMBER,
        }


# The causes of loss, in the order of the report's tables and charts.
LOSS_CAUSES = (GpuHours.DOWNTIME, GpuHours.PLANNED, GpuHours.REWORK, GpuHours.CHECKPOINT)


@css_prefix("recovery")
class RecoveryPart(ColouredChoices):
    """The parts of an interruption's recovery, failure to training resumed
    (docs/formulas.md, Recovery time and its parts), in the order they come."""

    DETECT = "detect", gettext_lazy("detect")
    LOCALISE = "localise", gettext_lazy("localise")
    MITIGATE = "mitigate", gettext_lazy("mitigate")
    RESTART = "restart", gettext_lazy("restart")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {
            "detect": Hue.AMBER,
            "localise": Hue.ORANGE,
            "mitigate": Hue.STEEL,
            "restart": Hue.PURPLE,
        }


@css_prefix("downpart")
class DowntimePart(ColouredChoices):
    """A part of a failure's downtime (the `DOWNTIME_PARTS` of `reports/effective.py`, in the
    same order): cut at its detection, localisation and mitigation (docs/formulas.md, Where
    the downtime went)."""

    DETECT = "detect", gettext_lazy("detecting")
    LOCALISE = "localise", gettext_lazy("localising")
    MITIGATE = "mitigate", gettext_lazy("mitigating")
    RESTART = "restart", gettext_lazy("restarting")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return RecoveryPart.palette()  # one colour per part on every page

    @property
    def span(self) -> str:
        """From which time to which, in words."""
        return {
            "detect": _("failure → detected"),
            "localise": _("detected → localised"),
            "mitigate": _("localised → mitigated"),
            "restart": _("mitigated → training resumed"),
        }[self.value]


# The parts of failure downtime, in the order of the report's bars.
DOWNTIME_PARTS = tuple(DowntimePart)
