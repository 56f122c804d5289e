"""Job statuses and their colours."""

from __future__ import annotations

from apps.common.choices import ColouredChoices, Hue, css_prefix


@css_prefix("job")
class JobStatus(ColouredChoices):
    """Where a training run is in its life."""

    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"

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

    OK = "ok", "OK"
    DEGRADED = "degraded", "Degraded"
    INTERRUPTED = "interrupted", "Interrupted"
    HUNG = "hung", "Hung"

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

    SILENT = "silent", "Silent"
    OUTSIDE = "outside", "Outside the collective"
    BEHIND = "behind", "Behind"
    WAITING = "waiting", "Waiting"
    RUNNING = "running", "Running"

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {
            "silent": Hue.RED,
            "outside": Hue.ORANGE,
            "behind": Hue.AMBER,
            "waiting": Hue.SLATE,
            "running": Hue.GREEN,
        }
