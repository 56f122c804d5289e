"""What the reports app stores: which weekly reports were e-mailed, slow figures computed
ahead by a worker, and each cluster's targets."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from apps.fleet.models import Cluster
from apps.reports.targets import DEFAULTS, HOURS_PER_DAY, MFU_REFERENCE, Targets


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
        verbose_name_plural = "report deliveries"

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


def _ratio(name: str) -> list:
    return [MinValueValidator(0.0, f"{name} is a share from 0 to 1"), MaxValueValidator(1.0)]


class ClusterTargets(models.Model):
    """An admin's floors for one cluster's figures (docs/formulas.md, Targets); a cluster without a
    row reads `targets.DEFAULTS`. Shares are 0–1 (0.99 = 99%); MTBF is the cluster's, in days."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="targets")
    effective_rate = models.FloatField(
        default=DEFAULTS["effective_rate"],
        validators=_ratio("effective rate"),
        help_text="weekly effective training rate, at least (0.99 = 99%)",
    )
    cluster_mtbf_days = models.FloatField(
        default=DEFAULTS["mtbf_hours"] / HOURS_PER_DAY,
        validators=[MinValueValidator(0.0)],
        help_text="cluster MTBF, at least, in days",
    )
    availability = models.FloatField(
        default=DEFAULTS["availability"],
        validators=_ratio("availability"),
        help_text="GPU availability, at least (0.99 = 99%)",
    )
    mfu = models.FloatField(
        default=DEFAULTS["mean_mfu"],
        validators=_ratio("MFU"),
        help_text="GPU-weighted MFU, at least (0.5 = 50%); "
        f"{MFU_REFERENCE:.0%} is the best public figure, shown as a reference",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "cluster targets"
        verbose_name_plural = "cluster targets"

    def __str__(self) -> str:
        return f"targets of {self.cluster}"

    def as_targets(self) -> Targets:
        """The floors as the reports read them."""
        return Targets(
            effective_rate=self.effective_rate,
            mtbf_hours=self.cluster_mtbf_days * HOURS_PER_DAY,
            availability=self.availability,
            mean_mfu=self.mfu,
        )


class AvailabilityDay(models.Model):
    """A cluster's UTC day whose node downtime is summed in NodeDayDown by beat once the day
    is over (docs/formulas.md, GPU availability: how the sums are kept). `through_change`
    is the newest NodeStateChange id when it was summed: a change written later with a time
    before the day's end (a back-fill) makes the day stale, read from the history again until
    beat sums it anew."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    through_change = models.BigIntegerField()
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "day"], name="availability_day_unique")
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id} {self.day}"


class NodeDayDown(models.Model):
    """A node's unavailable time in one summed UTC day, in microseconds (only days with
    some), within its time in service as its `in_service_at` then was."""

    node = models.ForeignKey("fleet.Node", on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    down_us = models.BigIntegerField()
    in_service_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "day"], name="node_day_down_unique")]
        indexes = [models.Index(fields=["day"], name="node_day_down_day")]

    def __str__(self) -> str:
        return f"{self.node_id} {self.day} {self.down_us} µs"
