"""Job statuses and their colours."""

from __future__ import annotations

from apps.common.choices import ColouredChoices, css_prefix


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
            "pending": "#8c8c8c",
            "running": "#1f77b4",
            "completed": "#2e9e4f",
            "failed": "#d62728",
            "cancelled": "#6b6b6b",
        }


ENDED_STATUSES = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED})


@css_prefix("cond")
class JobCondition(ColouredChoices):
    """What a job's open incidents say of it (CONTRACT §6): `hung` (an open hang incident),
    `interrupted` (another open incident that interrupts it), `degraded` (an open incident
    naming one of its nodes, or the job itself), else `ok`."""

    OK = "ok", "OK"
    DEGRADED = "degraded", "Degraded"
    INTERRUPTED = "interrupted", "Interrupted"
    HUNG = "hung", "Hung"

    @classmethod
    def palette(cls) -> dict[str, str]:
        return {
            "ok": "#2e9e4f",
            "degraded": "#d9a400",
            "interrupted": "#ef7d22",
            "hung": "#d62728",
        }


# A job in these conditions does no work: its MFU now is 0 (CONTRACT §6).
STOPPED_CONDITIONS = frozenset({JobCondition.HUNG, JobCondition.INTERRUPTED})
