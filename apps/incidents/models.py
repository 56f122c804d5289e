"""Incidents: every interruption of training, with the times the statistics are made of."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from apps.fleet.models import Cluster, Node
from apps.incidents.choices import (
    ACTIVE_STATUSES,
    TITLE_LENGTH,
    AlertStatus,
    Category,
    IncidentStatus,
    PostmortemStatus,
    Severity,
    Source,
)
from apps.jobs.models import Job


class Incident(models.Model):
    """A failure or planned interruption. f(i) = occurred_at, else detected_at
    (docs/incidents.md, Times)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="incidents")
    title = models.CharField(max_length=TITLE_LENGTH)
    category = models.CharField(max_length=32, choices=Category.choices)
    severity = models.CharField(max_length=8, choices=Severity.choices)
    status = models.CharField(
        max_length=16, choices=IncidentStatus.choices, default=IncidentStatus.OPEN
    )
    occurred_at = models.DateTimeField(null=True, blank=True)
    detected_at = models.DateTimeField()
    localized_at = models.DateTimeField("localised at", null=True, blank=True)
    recovered_at = models.DateTimeField(null=True, blank=True)
    # The road back (docs/incidents.md, The road back): filled from what KUAE sees unless a
    # person set them; `details.times_by_person` names the times a person set.
    mitigated_at = models.DateTimeField(null=True, blank=True)
    restarted_at = models.DateTimeField(null=True, blank=True)
    restored_at = models.DateTimeField(null=True, blank=True)
    caught_up_at = models.DateTimeField("caught up at", null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    job = models.ForeignKey(
        Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="incidents"
    )
    nodes = models.ManyToManyField(Node, related_name="incidents", blank=True)
    interrupts_job = models.BooleanField(default=False)
    planned = models.BooleanField(default=False)
    description = models.TextField(blank=True, default="")
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.MANUAL)
    fingerprint = models.CharField(max_length=128, blank=True, default="")
    # Machine-set facts that have no column: for an alert, the GPU it names (`gpu`,
    # `gpu_uuid`) and the alert's name and labels.
    details = models.JSONField(default=dict, blank=True)
    # What it cost (apps.incidents.impact), refreshed whenever the incident changes.
    # Ownership (docs/on-call.md): who works on it, who acknowledged it and when, and when an
    # unacknowledged sev1/sev2 was escalated (once).
    assignee = models.CharField(max_length=150, blank=True, default="")
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.CharField(max_length=150, blank=True, default="")
    escalated_at = models.DateTimeField(null=True, blank=True)
    downtime_s = models.FloatField(default=0)
    rework_s = models.FloatField(default=0)
    lost_gpu_hours = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-detected_at", "-id"]
        indexes = [
            models.Index(fields=["cluster", "detected_at"], name="incident_cluster_detected"),
            models.Index(fields=["status", "severity"], name="incident_status_severity"),
            models.Index(fields=["cluster", "lost_gpu_hours"], name="incident_cost"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.title}"

    @property
    def failed_at(self):  # noqa: ANN201 - datetime
        """f(i): when it failed — occurred_at, else detected_at."""
        return self.occurred_at or self.detected_at

    @property
    def job_word(self) -> str:
        """What this incident says of its job, in the words the job's page uses
        (docs/incidents.md, A job's condition): `hung` for an active hang, `interrupted` for
        another active interruption, `was hung` / `was interrupted` once it is over; "" when
        it does not stop the job."""
        if not self.interrupts_job and self.category != Category.HANG:
            return ""
        over = self.status not in ACTIVE_STATUSES or self.recovered_at is not None
        if self.category == Category.HANG:
            return str(_("was hung") if over else _("hung"))
        return str(_("was interrupted") if over else _("interrupted"))

    @property
    def kept_running(self) -> tuple[int, dt.datetime] | None:
        """(step, when) the job reported after this interruption began, higher than any
        before it: the job was not interrupted (apps/incidents/progress.py); else None."""
        went_on = (self.details or {}).get("kept_running")
        if not isinstance(went_on, dict):
            return None
        try:
            return int(went_on["step"]), dt.datetime.fromisoformat(str(went_on["at"]))
        except (KeyError, TypeError, ValueError):
            return None


class TimelineEntry(models.Model):
    """One line of an incident's timeline: who or what did what, when. Never edited."""

    class Kind(models.TextChoices):
        OPENED = "opened", _("Opened")
        UPDATED = "updated", _("Updated")
        CLEARED = "cleared", _("Condition cleared")
        NOTE = "note", _("Note")

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="timeline")
    at = models.DateTimeField()
    actor = models.CharField(max_length=150, help_text="a username, or check:KIND")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    text = models.TextField()

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["incident", "at"], name="timeline_incident_at")]
        verbose_name_plural = "timeline entries"

    def __str__(self) -> str:
        return f"#{self.incident_id} {self.kind} @ {self.at:%Y-%m-%d %H:%M}"


class Postmortem(models.Model):
    """An incident's postmortem: draft → in_review → approved (approved by another engineer)."""

    Status = PostmortemStatus

    incident = models.OneToOneField(Incident, on_delete=models.CASCADE, related_name="postmortem")
    summary = models.TextField(blank=True, default="")
    root_cause = models.TextField(blank=True, default="")
    category = models.CharField(max_length=32, choices=Category.choices, blank=True, default="")
    timeline = models.JSONField(default=list, blank=True, help_text="[{at, text}]")
    contributing_factors = models.TextField(blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="postmortems_written",
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="postmortems_reviewed",
    )
    review_comment = models.TextField(blank=True, default="")
    # Everyone who changed its content; `author` is the last of them. None may review it.
    editors = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="postmortems_edited"
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"postmortem of #{self.incident_id} ({self.status})"

    def reviewable_by(self, user_id: int | None) -> bool:
        """Whether that user may approve or reject it: never its author, nor anyone who
        changed its content (the two-person rule: a reviewer wrote none of it)."""
        if user_id is None or user_id == self.author_id:
            return False
        return not self.editors.filter(pk=user_id).exists()


class ActionItem(models.Model):
    """Something to do so it does not happen again; overdue when past `due` and not done."""

    postmortem = models.ForeignKey(
        Postmortem, on_delete=models.CASCADE, related_name="action_items"
    )
    text = models.TextField()
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="action_items"
    )
    due = models.DateField(null=True, blank=True)
    done = models.BooleanField(default=False)

    class Meta:
        ordering = ["due", "id"]
        indexes = [models.Index(fields=["done", "due"], name="action_open_due")]

    def __str__(self) -> str:
        return self.text[:60]


class AlertFingerprint(models.Model):
    """One Alertmanager alert, by fingerprint, and the incident it feeds (its own, or a
    check's it folded into). The unique fingerprint is what keeps one incident per alert
    however many deliveries race (an HA pair sends each twice at once)."""

    fingerprint = models.CharField(max_length=64, unique=True)
    incident = models.ForeignKey(
        Incident, on_delete=models.CASCADE, related_name="alert_fingerprints"
    )
    starts_at = models.DateTimeField(help_text="startsAt of the alert's current firing")
    ends_at = models.DateTimeField(null=True, blank=True, help_text="when that firing resolved")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.fingerprint} → #{self.incident_id}"


class UnroutedAlert(models.Model):
    """An Alertmanager alert kept without an incident: it named no known node or cluster (or
    its webhook had already opened the most incidents one webhook may). Upserted by
    fingerprint; listed for operators, counted in /metrics."""

    Status = AlertStatus

    fingerprint = models.CharField(max_length=64, unique=True)
    labels = models.JSONField(default=dict)
    annotations = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField(null=True, blank=True)
    received_at = models.DateTimeField(help_text="the latest delivery")
    first_received_at = models.DateTimeField()
    deliveries = models.PositiveIntegerField(default=1)
    reason = models.CharField(max_length=200)

    class Meta:
        ordering = ["-received_at", "-id"]
        indexes = [models.Index(fields=["received_at"], name="unrouted_received")]

    def __str__(self) -> str:
        return f"{self.alertname or 'alert'} {self.fingerprint} ({self.status})"

    @property
    def alertname(self) -> str:
        """The alert's name (its `alertname` label)."""
        return str(self.labels.get("alertname", ""))

    @property
    def summary(self) -> str:
        """Its `summary` annotation, else its `description`."""
        return str(self.annotations.get("summary") or self.annotations.get("description") or "")

    @property
    def label_pairs(self) -> list[tuple[str, str]]:
        """Labels to show, the ones placement reads first (node, host, instance, cluster),
        then the rest by name; `alertname` is shown on its own."""
        first = ("node", "hostname", "Hostname", "instance", "cluster")
        return sorted(
            ((k, str(v)) for k, v in self.labels.items() if k != "alertname"),
            key=lambda kv: (first.index(kv[0]) if kv[0] in first else len(first), kv[0]),
        )


class Delivery(models.Model):
    """One notification of an incident over one channel (an e-mail to the list, a post to the
    webhook), sent once: a worker claims it with a conditional update, and a failing channel
    is retried on its own without re-sending the other."""

    class Channel(models.TextChoices):
        EMAIL = "email", "E-mail"
        WEBHOOK = "webhook", "Webhook"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed (retrying)"
        SKIPPED = "skipped", "Skipped (over the page rate)"

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=8, choices=Channel.choices)
    purpose = models.CharField(max_length=16, default="opened", help_text="opened, escalated")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["incident", "channel", "purpose"], name="delivery_once")
        ]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.channel} {self.purpose} of incident {self.incident_id}: {self.status}"


class AlertPost(models.Model):
    """The outbox of alerts KUAE posts to a site's Alertmanager (docs/alertmanager.md, Alerts
    out): one row per (alert label set, Alertmanager), holding the alert as it is to be
    posted next. A row is pending until that Alertmanager accepts it; a refused or failed
    post is retried with backoff (`due_at`), so an Alertmanager that is down loses nothing.
    An ended alert's row (endsAt in the past) goes once it is delivered."""

    subject = models.CharField(max_length=64, help_text="what the alert is about: incident:42")
    label_key = models.CharField(max_length=64, help_text="sha256 of the sorted label set")
    alertmanager = models.CharField(max_length=500)
    labels = models.JSONField(default=dict)
    annotations = models.JSONField(default=dict, blank=True)
    generator_url = models.CharField(max_length=500, blank=True, default="")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    pending = models.BooleanField(default=True)
    due_at = models.DateTimeField(help_text="when it may be posted (later after failures)")
    attempts = models.PositiveIntegerField(default=0, help_text="failures since the last post")
    error = models.CharField(max_length=500, blank=True, default="")
    refreshed_at = models.DateTimeField(help_text="when endsAt was last moved on")
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["alertmanager", "subject", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["label_key", "alertmanager"], name="alert_post_once_per_alertmanager"
            )
        ]
        indexes = [models.Index(fields=["pending", "due_at"], name="alert_post_due")]

    def __str__(self) -> str:
        return f"{self.subject} → {self.alertmanager} ({'pending' if self.pending else 'sent'})"
