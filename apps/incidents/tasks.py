"""Incident background work: notification deliveries, each channel retried on its own;
unrouted alerts' retention."""

from __future__ import annotations

import datetime as dt

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from apps.common.retention import delete_in_batches
from apps.incidents.alerts_out import alerts_out_tick
from apps.incidents.models import UnroutedAlert
from apps.incidents.services_notify import delivery_send
from apps.incidents.services_owners import incidents_escalate


@shared_task(
    name="apps.incidents.tasks.delivery_send",
    ignore_result=True,
    acks_late=True,
    autoretry_for=(Exception,),
    retry_backoff=True,
    retry_backoff_max=300,
    max_retries=8,
)
def delivery_send_task(delivery_id: int) -> bool:
    """Send one delivery (a no-op when it was sent already); a failure retries it."""
    return delivery_send(delivery_id=delivery_id)


@shared_task(name="apps.incidents.tasks.escalate", ignore_result=True)
def escalate() -> int:
    """Escalate unacknowledged sev1/sev2 incidents past their time (docs/on-call.md, Escalation)."""
    return incidents_escalate()


@shared_task(name="apps.incidents.tasks.alerts_out", ignore_result=True)
def alerts_out() -> dict[str, int]:
    """Post the alert set to the site's Alertmanagers (docs/alertmanager.md, Alerts out)."""
    return alerts_out_tick()


def unrouted_prune(*, older_than_days: int, now: dt.datetime | None = None) -> int:
    """Delete unrouted alerts not delivered again for the given age; returns how many."""
    cutoff = (now or timezone.now()) - dt.timedelta(days=older_than_days)
    return delete_in_batches(UnroutedAlert.objects.filter(received_at__lt=cutoff))


@shared_task(name="apps.incidents.tasks.prune_unrouted", ignore_result=True)
def prune_unrouted() -> int:
    """Delete unrouted alerts past the retention age."""
    return unrouted_prune(older_than_days=settings.KUAE_RETAIN_UNROUTED_DAYS)
