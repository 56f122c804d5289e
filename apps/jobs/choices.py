"""Job statuses and their colours."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from apps.common.choices import ColouredChoices, Hue, css_prefix


@css_prefix("job")
class JobStatus(ColouredChoices):
    """Where a training run is in its life."""

    PENDING = "pending", _("Pending")
    RUNNING = "running", _("Running")
    COMPLETED = "completed", _("Completed")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {
            "pending": Hue.GREY,
            "running": Hue.BLUE,
            "completed": Hue.GREEN,
            "failed": Hue.RED,
            "cancelled": Hue.DARK_GREY,
        }


ENDED_STATUSES = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED})


@css_prefix("cond")
class JobCondition(ColouredChoices):
    """What a job's open incidents say of it (docs/incidents.md, A job's condition): `hung` (an open
    hang incident), `interrupted` (another open incident that interrupts it), `degraded` (an open
    incident naming one of its nodes, or the job itself), else `ok`."""

    OK = "ok", _("OK")
    DEGRADED = "degraded", _("Degraded")
    INTERRUPTED = "interrupted", _("Interrupted")
    HUNG = "hung", _("Hung")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {
            "ok": Hue.GREEN,
            "degraded": Hue.AMBER,
            "interrupted": Hue.ORANGE,
            "hung": Hue.RED,
        }


# A job in these conditions does no work: its MFU now is 0 (docs/incidents.md).
STOPPED_CONDITIONS = frozenset({JobCondition.HUNG, JobCondition.INTERRUPTED})


@css_prefix("rank")
class RankVerdict(ColouredChoices):
    """What a hang's verdict says of one rank (docs/checks.md, Ranks): the culprits are the
    silent, outside and behind ranks when they are a minority."""

    SILENT = "silent", _("Silent")
    OUTSIDE = "outside", _("Outside the collective")
    BEHIND = "behind", _("Behind")
    WAITING = "waiting", _("Waiting")
    RUNNING = "running", _("Running")

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {
            "silent": Hue.RED,
            "outside": Hue.ORANGE,
            "behind": Hue.AMBER,
            "waiting": Hue.SLATE,
            "running": Hue.GREEN,
        }
