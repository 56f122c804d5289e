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
