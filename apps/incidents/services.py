"""Writes to incidents (the full lifecycle, timeline and postmortems build on this)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.fleet.models import Cluster, Node
from apps.incidents.choices import Category, IncidentStatus, Severity, Source
from apps.incidents.models import Incident
from apps.jobs.models import Job

# occurred ≤ detected ≤ localized ≤ recovered ≤ resolved, each only when both are set.
_ORDER = ("occurred_at", "detected_at", "localized_at", "recovered_at", "resolved_at")


def validate_times(times: dict[str, dt.datetime | None]) -> None:
    """Raise a ValidationError naming the field that comes before an earlier one."""
    errors: dict[str, list[str]] = {}
    for i, later in enumerate(_ORDER):
        for earlier in _ORDER[:i]:
            a, b = times.get(earlier), times.get(later)
            if a is not None and b is not None and b < a:
                errors.setdefault(later, []).append(f"is before {earlier}")
    if errors:
        raise ValidationError(errors)


@transaction.atomic
def incident_open(
    *,
    cluster: Cluster,
    title: str,
    category: str,
    severity: str,
    detected_at: dt.datetime,
    occurred_at: dt.datetime | None = None,
    localized_at: dt.datetime | None = None,
    recovered_at: dt.datetime | None = None,
    resolved_at: dt.datetime | None = None,
    status: str = IncidentStatus.OPEN,
    job: Job | None = None,
    nodes: Sequence[Node] = (),
    interrupts_job: bool = False,
    planned: bool = False,
    description: str = "",
    source: str = Source.MANUAL,
    fingerprint: str = "",
) -> Incident:
    """Open an incident after checking its category, severity and the order of its times."""
    if category not in Category.values:
        raise ValidationError({"category": [f"unknown category {category!r}"]})
    if severity not in Severity.values:
        raise ValidationError({"severity": [f"unknown severity {severity!r}"]})
    validate_times(
        {
            "occurred_at": occurred_at,
            "detected_at": detected_at,
            "localized_at": localized_at,
            "recovered_at": recovered_at,
            "resolved_at": resolved_at,
        }
    )
    incident = Incident.objects.create(
        cluster=cluster,
        title=title,
        category=category,
        severity=severity,
        status=status,
        occurred_at=occurred_at,
        detected_at=detected_at,
        localized_at=localized_at,
        recovered_at=recovered_at,
        resolved_at=resolved_at,
        job=job,
        interrupts_job=interrupts_job,
        planned=planned,
        description=description,
        source=source,
        fingerprint=fingerprint,
    )
    if nodes:
        incident.nodes.set(nodes)
    return incident
