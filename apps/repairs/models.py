"""Repairs: the record of a node taken out of service and its road back (docs/repairs.md)."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _

from apps.fleet.models import Node, NodeStateChange
from apps.incidents.models import Incident
from apps.repairs.choices import Closure, RepairAction, RepairStatus

# A check result's status as the repair's evidence table says it (the stored value stays).
RESULT_WORDS = {"pass": _("pass"), "warn": _("warn"), "fail": _("fail")}


class Repair(models.Model):
    """A node's time out of service: why (`reason`, the incidents open then, the failing
    check results as `evidence`), what was done (`steps`), and its return (`burn_in` until
    a fresh probe passes, then `closed`). One repair is open per node at a time; a further
    drain or down while it is open is added to it (`changes`)."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="repairs")
    opened_at = models.DateTimeField()
    reason = models.TextField(blank=True, default="")
    status = models.CharField(max_length=8, choices=RepairStatus.choices, default=RepairStatus.OPEN)
    incidents = models.ManyToManyField(Incident, related_name="repairs", blank=True)
    # The node's failing (and warning) check results when it was taken out: [{kind, target,
    # status, message, at}] — a copy, so the record stays when the results move on.
    evidence = models.JSONField(default=list, blank=True)
    # [{action, at, by, note, ticket}] in the order they were done.
    steps = models.JSONField(default=list, blank=True)
    return_requested_at = models.DateTimeField(null=True, blank=True)
    return_requested_by = models.CharField(max_length=150, blank=True, default="")
    skip_burn_in = models.BooleanField(default=False)
    # What the last burn-in evaluation found (why the node is still out), and when.
    burn_in_note = models.TextField(blank=True, default="")
    burn_in_checked_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_how = models.CharField(max_length=8, choices=Closure.choices, blank=True, default="")
    closed_by = models.CharField(max_length=150, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["node"],
                condition=~models.Q(status=RepairStatus.CLOSED),
                name="repair_one_open_per_node",
            )
        ]
        indexes = [
            models.Index(fields=["status", "opened_at"], name="repair_status_opened"),
            models.Index(fields=["node", "opened_at"], name="repair_node_opened"),
        ]

    def __str__(self) -> str:
        return f"repair #{self.pk} of node {self.node_id} ({self.status})"

    @property
    def steps_shown(self) -> list[dict[str, Any]]:
        """The steps with `word`: the action as the page's language names it."""
        words = dict(RepairAction.choices)
        return [{**s, "word": words.get(s.get("action"), s.get("action"))} for s in self.steps]

    @property
    def evidence_shown(self) -> list[dict[str, Any]]:
        """The evidence with `word`: each result's status as the page's language says it."""
        return [
            {**e, "word": RESULT_WORDS.get(e.get("status"), e.get("status"))} for e in self.evidence
        ]

    @property
    def status_choice(self) -> RepairStatus:
        """The status as its choice member (label and colour)."""
        return RepairStatus(self.status)


class RepairChange(models.Model):
    """A drain or down of the node that opened the repair or was added to it: each state
    change is read once (the unique change makes re-reading it harmless)."""

    repair = models.ForeignKey(Repair, on_delete=models.CASCADE, related_name="changes")
    change = models.OneToOneField(NodeStateChange, on_delete=models.CASCADE, related_name="+")

    def __str__(self) -> str:
        return f"repair #{self.repair_id} change {self.change_id}"


# State change ids re-read behind the cursor: a transaction that committed late.
OVERLAP = 500


class Cursor(models.Model):
    """How far the repairs app has read the fleet's state history (one row); each sync
    re-reads OVERLAP ids behind it."""

    last_change_id = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"state changes read up to #{self.last_change_id}"
