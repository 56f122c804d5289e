"""What the scheduler app keeps: each cluster's sync state (docs/slurm.md, The live sync: a
failed sync is visible, never silent). The actuation outbox itself is fleet's `Actuation`."""

from __future__ import annotations

from django.db import models

from apps.fleet.models import Cluster


class SchedulerSync(models.Model):
    """The last sync of a cluster with its scheduler, and where the next one reads from."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="sched_sync")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    ok = models.BooleanField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True, default="")
    last_ok_at = models.DateTimeField(null=True, blank=True)
    failures = models.PositiveIntegerField(default=0, help_text="failed syncs in a row")
    # Jobs that ended are read from the accounting since this time (the last good sync).
    ended_since = models.DateTimeField(null=True, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    duration_s = models.FloatField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.cluster_id} sync ok={self.ok}"
