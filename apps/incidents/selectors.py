"""Reads of incidents for pages."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import QuerySet

from apps.incidents.models import Incident

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
    """The incident's times as marks along one bar, from the failure to the last time set."""
    times = [
        (label, getattr(incident, field)) for field, label in MARKS if getattr(incident, field)
    ]
    start = incident.failed_at
    end = max(t for _, t in times)
    span = max((end - start).total_seconds(), 1.0)
    return [
        Mark(
            label,
            t,
            100 * max(0.0, (t - start).total_seconds()) / span,
            (t - start).total_seconds(),
        )
        for label, t in times
    ]
