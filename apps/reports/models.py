"""What the reports app stores: which weekly reports were e-mailed, and slow figures
computed ahead by a worker."""

from __future__ import annotations

from django.db import models

from apps.fleet.models import Cluster


class ReportDelivery(models.Model):
    """A weekly report sent by e-mail: at most once per cluster and ISO week."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="deliveries")
    week = models.CharField(max_length=8, help_text="ISO week, e.g. 2026-W47")
    recipients = models.TextField()
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "week"], name="delivery_cluster_week")
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id} {self.week}"


class Snapshot(models.Model):
    """A figure too slow to compute on every poll (the overview's effective rate this week
    and 30-day MTBF), refreshed every minute by beat; pages read the row."""

    key = models.CharField(max_length=100, unique=True)
    computed_at = models.DateTimeField()
    data = models.JSONField()

    def __str__(self) -> str:
        return f"{self.key} @ {self.computed_at:%H:%M:%S}"
