"""What the scheduler app keeps: each cluster's sync state (docs/slurm.md, The live sync: a
failed sync is visible, never silent), each node as Slurm saw it, and the actuation outbox
(docs/slurm.md, Actuation)."""

from __future__ import annotations

from django.db import models

from apps.fleet.models import Cluster, Node, NodeStateChange
from apps.scheduler.choices import ActuationAction, ActuationResult


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


class SchedulerNode(models.Model):
    """A node as its scheduler saw it at the last sync — Slurm's state and reason, shown on
    the node page beside KUAE's own (docs/slurm.md, The live sync). A row for every node a
    sync has seen; its key is the node's. Moved here from the fleet's node columns with their
    values (scheduler.0003, fleet.0017)."""

    node = models.OneToOneField(
        Node, primary_key=True, on_delete=models.CASCADE, related_name="sched"
    )
    state = models.CharField(max_length=64, blank=True, default="", help_text="`idle+drain`")
    reason = models.CharField(max_length=300, blank=True, default="")
    synced_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.node_id} in the scheduler: {self.state or '?'}"


class Actuation(models.Model):
    """A request to the scheduler to drain or resume a node: the outbox (docs/slurm.md).

    Written in the same transaction as the state change it follows (the fleet's
    `node_set_state` calls `services/actuation.py`'s `actuation_request`, lent to it at
    start-up), so it is never lost; delivery sends pending rows and records the result.
    Moved here from the fleet with its rows and ids (fleet.0016, scheduler.0002).
    """

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="actuations")
    state_change = models.ForeignKey(
        NodeStateChange, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=8, choices=ActuationAction.choices)
    reason = models.CharField(max_length=200)
    requested_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)
    result = models.CharField(
        max_length=8, choices=ActuationResult.choices, default=ActuationResult.PENDING
    )
    error = models.CharField(max_length=500, blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    next_try_at = models.DateTimeField()

    class Meta:
        ordering = ["-requested_at", "-id"]
        indexes = [
            models.Index(
                fields=["next_try_at", "id"],
                condition=models.Q(result="pending"),
                name="actuation_pending",
            ),
            models.Index(fields=["node", "requested_at"], name="actuation_node"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.node_id} ({self.result})"

    @property
    def result_choice(self) -> ActuationResult:
        """The result as its choice member (label and colour)."""
        return ActuationResult(self.result)
