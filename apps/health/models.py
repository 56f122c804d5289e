"""Check runs, each target's current result, per-cluster thresholds and schedules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import models

from apps.fleet.models import Cluster, Node
from apps.health.choices import ResultStatus, RunStatus
from apps.jobs.models import Job

if TYPE_CHECKING:
    from apps.health.limits import Limits

# A check's kind is a slug its plug-in declares (`apps.health.checks`), not a database choice:
# a new kind of check needs no migration.
KIND_HELP = "the check's kind: a slug its plug-in declares"


class Thresholds(models.Model):
    """A cluster's own check thresholds: overrides of the defaults that
    plug-ins declare (`apps.health.limits`: name → value); a name not here has its
    default."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="thresholds")
    values = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        verbose_name_plural = "thresholds"

    def __str__(self) -> str:
        return f"thresholds of {self.cluster_id}"

    @property
    def limits(self) -> Limits:
        """The thresholds in force: defaults with these overrides."""
        from apps.health.limits import limits_from  # the plug-ins load the models

        return limits_from(self.values)

    def clean(self) -> None:
        """Every override a known threshold with a number within its bounds (the admin's
        door; the health page's form checks the same bounds): a ValidationError naming
        each bad one and its bounds."""
        from apps.health.limits import values_problems

        problems = values_problems(self.values)
        if problems:
            raise ValidationError(
                {"values": [f"{name}: {problem}" for name, problem in problems.items()]}
            )


class CheckSchedule(models.Model):
    """When a kind next runs for a cluster; claimed with a conditional update."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="check_schedules")
    kind = models.CharField(max_length=32, help_text=KIND_HELP)
    interval_s = models.PositiveIntegerField(default=60)
    enabled = models.BooleanField(default=True)
    next_due_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "kind"], name="schedule_once")]

    def __str__(self) -> str:
        return f"{self.kind} every {self.interval_s} s"


class CheckRun(models.Model):
    """One run of one kind over one cluster: what ran, when, how long, what it found."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="check_runs")
    kind = models.CharField(max_length=32, help_text=KIND_HELP)
    status = models.CharField(max_length=8, choices=RunStatus.choices, default=RunStatus.QUEUED)
    requested_by = models.CharField(max_length=150, blank=True, default="schedule")
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-queued_at", "-id"]
        indexes = [
            models.Index(fields=["cluster", "kind", "queued_at"], name="run_cluster_kind"),
            # the overview's reads (queued since when, last done, recent errors) and whether
            # any run started lately: through indexes, however long the history
            models.Index(fields=["cluster", "status", "queued_at"], name="run_cluster_status"),
            models.Index(fields=["cluster", "started_at"], name="run_cluster_started"),
            models.Index(fields=["queued_at"], name="run_queued_at"),  # retention
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} {self.status}"


class CheckResult(models.Model):
    """A check's current verdict on one target (`node:HOST`, `gpu:HOST/I`, `job:ID`,
    `cluster:NAME`). `at` is when a run last wrote it: every run for a warn or fail, only on
    a change for a pass. `last_fail_at` feeds pre-flight."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="check_results")
    kind = models.CharField(max_length=32, help_text=KIND_HELP)
    target = models.CharField(max_length=300)
    node = models.ForeignKey(
        Node, on_delete=models.CASCADE, null=True, blank=True, related_name="check_results"
    )
    job = models.ForeignKey(
        Job, on_delete=models.CASCADE, null=True, blank=True, related_name="check_results"
    )
    status = models.CharField(max_length=8, choices=ResultStatus.choices)
    message = models.TextField(blank=True, default="")
    details = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField()
    run = models.ForeignKey(CheckRun, on_delete=models.SET_NULL, null=True, blank=True)
    since = models.DateTimeField(help_text="when the current status began")
    last_fail_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "kind", "target"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "kind", "target"], name="result_once")
        ]
        indexes = [
            models.Index(fields=["cluster", "status"], name="result_cluster_status"),
            models.Index(fields=["node", "last_fail_at"], name="result_node_fail"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.target}: {self.status}"
