"""Maintenance windows, the nodes they cover, and the alerts they silenced (docs/maintenance.md)."""

from __future__ import annotations

import datetime as dt

from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from apps.fleet.models import Cluster, Node, NodeStateChange
from apps.maintenance.choices import WindowStatus


class MaintenanceWindow(models.Model):
    """Planned work on some of a cluster's nodes over `[start, end)`.

    `end` is when it ends: ending a window early (DELETE) moves `end` to that moment. A
    window that is `cancelled` never began. `status` is the bookkeeping of the beat task
    that applies starts and ends; whether a window covers an instant is decided by its
    times (`covers`), so nothing waits for the task.
    """

    cluster = models.ForeignKey(
        Cluster, on_delete=models.CASCADE, related_name="maintenance_windows"
    )
    start = models.DateTimeField()
    end = models.DateTimeField()
    reason = models.TextField()
    # What was asked for: a hostlist expression or hostnames, racks (the nodes are resolved).
    asked_nodes = models.TextField(blank=True, default="")
    racks = models.JSONField(default=list, blank=True)
    nodes = models.ManyToManyField(Node, through="WindowNode", related_name="maintenance_windows")
    status = models.CharField(
        max_length=16, choices=WindowStatus.choices, default=WindowStatus.SCHEDULED
    )
    created_by = models.CharField(max_length=150, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)  # when its nodes were put in it
    ended_at = models.DateTimeField(null=True, blank=True)  # when its nodes were given back
    ended_by = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        ordering = ["start", "id"]
        indexes = [
            models.Index(fields=["cluster", "end", "start"], name="window_cluster_times"),
            models.Index(fields=["status", "start"], name="window_status_start"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(end__gt=models.F("start")), name="window_end_after_start"
            )
        ]

    def __str__(self) -> str:
        return f"maintenance #{self.pk} {self.start:%Y-%m-%d %H:%M}–{self.end:%H:%M}"

    @property
    def nodes_label(self) -> str:
        """The nodes as the booking named them: its hostlist, and/or its racks (short)."""
        parts = [self.asked_nodes.strip()] if self.asked_nodes.strip() else []
        if self.racks:
            racks = ", ".join(self.racks)
            parts.append(
                ngettext("rack %(racks)s", "racks %(racks)s", len(self.racks)) % {"racks": racks}
            )
        text = " + ".join(parts) or str(_("no nodes"))
        return text if len(text) <= 40 else text[:39] + "…"

    def covers(self, at: dt.datetime) -> bool:
        """Whether the window is in progress at `at`."""
        return self.status != WindowStatus.CANCELLED and self.start <= at < self.end

    @property
    def status_choice(self) -> WindowStatus:
        """The status as its choice member (label and colour)."""
        return WindowStatus(self.status)


class WindowNode(models.Model):
    """A node of a window: the state it had when the window began, and the state change
    that put it in `maintenance` (it is given back only while that change is its newest)."""

    window = models.ForeignKey(MaintenanceWindow, on_delete=models.CASCADE)
    node = models.ForeignKey(Node, on_delete=models.CASCADE)
    state_before = models.CharField(max_length=16, blank=True, default="")
    change = models.ForeignKey(
        NodeStateChange, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    restored = models.BooleanField(null=True, blank=True)  # None until the window ended

    class Meta:
        constraints = [models.UniqueConstraint(fields=["window", "node"], name="window_node_once")]

    def __str__(self) -> str:
        return f"window #{self.window_id} node {self.node_id}"


class SilencedAlert(models.Model):
    """An Alertmanager alert that named a node of a window in progress: kept here, with no
    incident, one row per (window, fingerprint)."""

    class Status(models.TextChoices):
        FIRING = "firing", _("Firing")
        RESOLVED = "resolved", _("Resolved")

    window = models.ForeignKey(
        MaintenanceWindow, on_delete=models.CASCADE, related_name="silenced_alerts"
    )
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="+")
    fingerprint = models.CharField(max_length=64)
    alertname = models.CharField(max_length=200, blank=True, default="")
    labels = models.JSONField(default=dict)
    annotations = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=Status.choices)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField(null=True, blank=True)
    first_received_at = models.DateTimeField()
    received_at = models.DateTimeField()
    deliveries = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["-received_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["window", "fingerprint"], name="silenced_once")
        ]
        indexes = [models.Index(fields=["fingerprint"], name="silenced_fingerprint")]

    def __str__(self) -> str:
        return f"{self.alertname or self.fingerprint} silenced by window #{self.window_id}"
