"""Incident background work: notifications of new sev1/sev2 incidents, retried."""

from __future__ import annotations

import httpx
from celery import shared_task
from django.conf import settings
from django.core.mail import send_mail

from apps.incidents.models import Incident


def _text(incident: Incident) -> tuple[str, str]:
    nodes = ", ".join(incident.nodes.values_list("hostname", flat=True)) or "—"
    subject = f"[{incident.severity.upper()}] {incident.title}"
    body = (
        f"{incident.get_category_display()} on {incident.cluster.name}, nodes {nodes}\n"
        f"detected {incident.detected_at:%Y-%m-%d %H:%M:%S} UTC"
        + (f", job {incident.job_id}" if incident.job_id else "")
        + f"\n\n{incident.description}\n\n"
        + f"{settings.KUAE_BASE_URL}/api/v1/incidents/{incident.pk}/\n"
    )
    return subject, body


@shared_task(
    name="apps.incidents.tasks.notify_incident",
    ignore_result=True,
    acks_late=True,
    autoretry_for=(httpx.HTTPError, OSError),
    retry_backoff=True,
    retry_backoff_max=300,
    max_retries=8,
)
def notify_incident(incident_id: int) -> None:
    """E-mail the on-call list and post the optional webhook; transient failures retry."""
    incident = Incident.objects.select_related("cluster").filter(pk=incident_id).first()
    if incident is None:
        return
    subject, body = _text(incident)
    if settings.KUAE_NOTIFY_EMAILS:
        send_mail(subject, body, None, settings.KUAE_NOTIFY_EMAILS)
    if settings.KUAE_NOTIFY_WEBHOOK:
        payload = {
            "id": incident.pk,
            "title": incident.title,
            "severity": incident.severity,
            "category": incident.category,
            "cluster": incident.cluster.name,
            "detected_at": incident.detected_at.isoformat(),
            "text": f"{subject}\n{body}",
        }
        httpx.post(settings.KUAE_NOTIFY_WEBHOOK, json=payload, timeout=10).raise_for_status()
