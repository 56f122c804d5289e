"""Reads of incidents for pages."""

from __future__ import annotations

import datetime as dt
import math
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
