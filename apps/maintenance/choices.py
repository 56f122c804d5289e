"""Where a maintenance window stands, and its colours."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from apps.common.choices import ColouredChoices, Hue, css_prefix


@css_prefix("window")
class WindowStatus(ColouredChoices):
    """A window's life: booked (`scheduled`), applied to its nodes (`active`), over
    (`ended`), or called off before it began (`cancelled`)."""

    SCHEDULED = "scheduled", _("Upcoming")
    ACTIVE = "active", _("In progress")
    ENDED = "ended", _("Ended")
    CANCELLED = "cancelled", _("Cancelled")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {
            "scheduled": Hue.AMBER,
            "active": Hue.STEEL,
            "ended": Hue.DARK_GREY,
            "cancelled": Hue.DARK_GREY,
        }
