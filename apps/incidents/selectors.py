"""Reads of incidents for pages."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from django.db.models import F, QuerySet
from django.utils import timezone

from apps.incidents.models import ActionItem, Incident, UnroutedAlert

MARKS = (
    ("occurred_at", "occurred"),
    ("detected_at", "detected"),
    ("localized_at", "localised"),
    ("recovered_at", "recovered"),
    ("resolved_at", "resolved"),
)


def incident_list() -> QuerySet[Incident]:
    """Incidents, newest first, with cluster, job and nodes loaded in a fixed number of queries."""
    return (
        Incident.objects.select_related("cluster", "job")
        .prefetch_related("nodes")
        .order_by("-detected_at", "-id")
    )


@dataclass(frozen=True)
class Mark:
    """One of an incident's times, placed on its timeline bar (0–100%)."""

    label: str
    at: dt.datetime
    pct: float
    since_failure_s: float


def time_marks(incident: Incident) -> list[Mark]:
    """The incident's times as marks along one bar from the failure to the last time set, on
    a logarithmic scale: seconds to detection and hours to resolution both stay readable."""
    times = [
        (label, getattr(incident, field)) for field, label in MARKS if getattr(incident, field)
    ]
    start = incident.failed_at
    span = max(max((t - start).total_seconds() for _, t in times), 1.0)
    out = []
    for label, t in times:
        since = max(0.0, (t - start).total_seconds())
        out.append(Mark(label, t, 100 * math.log1p(since) / math.log1p(span), since))
    return out


def action_items(*, state: str = "open", owner: str = "") -> QuerySet[ActionItem]:
    """Action items with their incident: `open` (overdue first, by due date), `overdue`,
    `done` or `all`; optionally one owner's."""
    items = ActionItem.objects.select_related("owner", "postmortem__incident")
    today = timezone.now().date()
    if state == "overdue":
        items = items.filter(done=False, due__lt=today)
    elif state == "open":
        items = items.filter(done=False)
    elif state == "done":
        items = items.filter(done=True)
    if owner:
        items = items.filter(owner__username=owner)
    return items.order_by(F("due").asc(nulls_last=True), "id")


def overdue_count() -> int:
    """How many action items are past due and not done."""
    return ActionItem.objects.filter(done=False, due__lt=timezone.now().date()).count()


def unrouted_alerts(*, status: str = "") -> QuerySet[UnroutedAlert]:
    """Alertmanager alerts kept without an incident, optionally only `firing` or `resolved`."""
    alerts = UnroutedAlert.objects.all()
    if status in UnroutedAlert.Status.values:
        alerts = alerts.filter(status=status)
    return alerts


def unrouted_firing_count() -> int:
    """How many unrouted alerts are still firing."""
    return UnroutedAlert.objects.filter(status=UnroutedAlert.Status.FIRING).count()


def job_interruptions(job_id: int, limit: int) -> list[tuple[dt.datetime, dt.datetime | None]]:
    """The incidents that interrupted a job as (f(i), recovery or None), newest first, at
    most `limit` (one query; lent to the jobs app for its progress chart)."""
    rows = (
        Incident.objects.filter(job_id=job_id, interrupts_job=True)
        .order_by("-detected_at")
        .values_list("occurred_at", "detected_at", "recovered_at")[:limit]
    )
    return [(occurred or detected, recovered) for occurred, detected, recovered in rows]
