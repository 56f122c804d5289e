"""Owners, acknowledgement and escalation of incidents (docs/on-call.md)."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.incidents.choices import IncidentStatus, Severity
from apps.incidents.models import Incident, TimelineEntry
from apps.incidents.services import incident_note
from apps.incidents.services_notify import deliveries_queue


@transaction.atomic
def incident_acknowledge(*, incident: Incident, actor: str, now: dt.datetime | None = None) -> bool:
    """Acknowledge in one step: an `open` incident becomes `investigating`, with who and when,
    and one timeline line. A second acknowledgement changes nothing and writes nothing.
    Returns whether this call acknowledged it."""
    now = now or timezone.now()
    claimed = Incident.objects.filter(pk=incident.pk, acknowledged_at__isnull=True).update(
        acknowledged_at=now, acknowledged_by=actor
    )
    if not claimed:
        incident.refresh_from_db()
        return False
    moved = Incident.objects.filter(pk=incident.pk, status=IncidentStatus.OPEN).update(
        status=IncidentStatus.INVESTIGATING
    )
    incident.refresh_from_db()
    incident_note(
        incident=incident,
        kind=TimelineEntry.Kind.UPDATED,
        actor=actor,
        at=now,
        text="acknowledged" + ("; status: open → investigating" if moved else ""),
    )
    return True


def escalation_due(now: dt.datetime) -> Q:
    """Open sev1s unacknowledged past KUAE_ESCALATE_SEV1_MIN, sev2s past _SEV2_MIN, not yet
    escalated."""
    sev1 = now - dt.timedelta(minutes=settings.KUAE_ESCALATE_SEV1_MIN)
    sev2 = now - dt.timedelta(minutes=settings.KUAE_ESCALATE_SEV2_MIN)
    return Q(
        status=IncidentStatus.OPEN, acknowledged_at__isnull=True, escalated_at__isnull=True
    ) & (
        Q(severity=Severity.SEV1, detected_at__lte=sev1)
        | Q(severity=Severity.SEV2, detected_at__lte=sev2)
    )


def incidents_escalate(*, now: dt.datetime | None = None) -> int:
    """Escalate every incident due, once each: the claim is a conditional update, so two
    workers (or a task run twice) escalate it once. E-mail and webhook are separate
    deliveries, each retried on its own. Returns how many were escalated."""
    now = now or timezone.now()
    escalated = 0
    for pk in Incident.objects.filter(escalation_due(now)).values_list("pk", flat=True)[:500]:
        with transaction.atomic():
            if not Incident.objects.filter(escalation_due(now), pk=pk).update(escalated_at=now):
                continue
            incident = Incident.objects.select_related("cluster").get(pk=pk)
            waited = int((now - incident.detected_at).total_seconds() // 60)
            incident_note(
                incident=incident,
                kind=TimelineEntry.Kind.NOTE,
                actor="escalation",
                at=now,
                text=f"escalated: {incident.severity} not acknowledged after {waited} min",
            )
            deliveries_queue(incident=incident, purpose="escalated")
            escalated += 1
    return escalated
