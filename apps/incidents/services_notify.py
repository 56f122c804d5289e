"""Paging people about incidents: one delivery row per channel, each sent exactly once.

A delivery is written in the transaction that opens the incident and queued when it
commits; the worker claims it with a conditional update (so two workers, or a task that
runs twice, send it once) and a failure retries that channel alone.
"""

from __future__ import annotations

import datetime as dt
from functools import partial

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from apps.common.limits import PAGES_PER_MINUTE
from apps.incidents.models import Delivery, Incident

# A claim older than this belongs to a worker that died mid-send: it may be taken again.
STALE_CLAIM = dt.timedelta(minutes=10)


def deliveries_queue(*, incident: Incident, purpose: str = "opened") -> list[Delivery]:
    """One delivery per configured channel (none twice for the same purpose), sent by a
    worker once this transaction commits."""
    from apps.incidents.tasks import delivery_send_task

    emails, webhook = recipients(purpose)
    channels = []
    if emails:
        channels.append(Delivery.Channel.EMAIL)
    if webhook:
        channels.append(Delivery.Channel.WEBHOOK)
    Delivery.objects.bulk_create(
        [Delivery(incident=incident, channel=c, purpose=purpose) for c in channels],
        ignore_conflicts=True,
    )
    queued = list(
        Delivery.objects.filter(incident=incident, purpose=purpose, status=Delivery.Status.PENDING)
    )
    queued = _within_page_rate(incident, queued)
    for delivery in queued:
        transaction.on_commit(partial(delivery_send_task.delay, delivery.pk))
    return queued


def _within_page_rate(incident: Incident, pending: list[Delivery]) -> list[Delivery]:
    """The deliveries that may go out: a channel that has paged PAGES_PER_MINUTE times about
    the cluster's incidents in the last minute pages no more (docs/operations.md, Limits); a
    delivery over the rate is recorded as skipped, with the reason, instead of sent."""
    since = timezone.now() - dt.timedelta(minutes=1)
    out = []
    for delivery in pending:
        paged = (
            Delivery.objects.filter(
                incident__cluster_id=incident.cluster_id,
                channel=delivery.channel,
                created_at__gte=since,
            )
            .exclude(status=Delivery.Status.SKIPPED)
            .exclude(pk=delivery.pk)
            .count()
        )
        if paged < PAGES_PER_MINUTE:
            out.append(delivery)
            continue
        reason = (
            f"skipped: {delivery.channel} already paged {PAGES_PER_MINUTE} times in a minute "
            f"about cluster {incident.cluster.name} (the bound on pages per cluster per minute)"
        )
        Delivery.objects.filter(pk=delivery.pk).update(status=Delivery.Status.SKIPPED, error=reason)
    return out


def delivery_send(*, delivery_id: int, now: dt.datetime | None = None) -> bool:
    """Claim the delivery and send it. False when there was nothing to send (already sent,
    or another worker holds it); an error marks it failed and propagates, so the task
    retries this channel alone."""
    now = now or timezone.now()
    claimable = Q(status__in=(Delivery.Status.PENDING, Delivery.Status.FAILED)) | Q(
        status=Delivery.Status.SENDING, claimed_at__lt=now - STALE_CLAIM
    )
    claimed = Delivery.objects.filter(claimable, pk=delivery_id).update(
        status=Delivery.Status.SENDING, claimed_at=now
    )
    if not claimed:
        return False
    delivery = Delivery.objects.select_related("incident__cluster").get(pk=delivery_id)
    try:
        _send(delivery)
    except Exception as exc:
        Delivery.objects.filter(pk=delivery_id).update(
            status=Delivery.Status.FAILED,
            attempts=delivery.attempts + 1,
            error=f"{type(exc).__name__}: {exc}"[:500],
        )
        raise
    Delivery.objects.filter(pk=delivery_id).update(
        status=Delivery.Status.SENT,
        attempts=delivery.attempts + 1,
        sent_at=timezone.now(),
        error="",
    )
    return True


def recipients(purpose: str) -> tuple[list[str], str]:
    """(e-mail addresses, webhook URL) for a purpose: an escalation goes to the escalation
    list and hook (docs/on-call.md, Escalation), everything else to the on-call ones."""
    if purpose == "escalated":
        return list(settings.KUAE_ESCALATION_EMAILS), settings.KUAE_ESCALATION_WEBHOOK
    return list(settings.KUAE_NOTIFY_EMAILS), settings.KUAE_NOTIFY_WEBHOOK


def incident_page_url(incident: Incident) -> str:
    """The incident's page in the dashboard (what a person paged should open)."""
    return f"{settings.KUAE_BASE_URL.rstrip('/')}/incidents/{incident.pk}/"


def notification_text(incident: Incident, purpose: str) -> tuple[str, str]:
    """Subject and body of the message about `incident`, in the site's language
    (KUAE_LANGUAGE: a page has a reader's language, a message has none)."""
    with translation.override(settings.KUAE_LANGUAGE):
        nodes = ", ".join(incident.nodes.values_list("hostname", flat=True)) or "—"
        prefix = _("ESCALATED") + " " if purpose == "escalated" else ""
        # One line: a newline in the title must not become a header break (BadHeaderError).
        subject = " ".join(f"[{prefix}{incident.severity.upper()}] {incident.title}".split())
        where = {
            "category": incident.get_category_display(),
            "cluster": incident.cluster.name,
            "nodes": nodes,
        }
        body = (
            _("%(category)s on %(cluster)s, nodes %(nodes)s") % where
            + "\n"
            + _("detected %(at)s UTC") % {"at": f"{incident.detected_at:%Y-%m-%d %H:%M:%S}"}
            + (_(", job %(job)s") % {"job": incident.job_id} if incident.job_id else "")
            + f"\n\n{incident.description}\n\n{incident_page_url(incident)}\n"
        )
    return subject, body


def _send(delivery: Delivery) -> None:
    incident = delivery.incident
    subject, body = notification_text(incident, delivery.purpose)
    emails, webhook = recipients(delivery.purpose)
    if delivery.channel == Delivery.Channel.EMAIL:
        send_mail(subject, body, None, emails)
        return
    payload = {
        "id": incident.pk,
        "title": incident.title,
        "severity": incident.severity,
        "category": incident.category,
        "cluster": incident.cluster.name,
        "detected_at": incident.detected_at.isoformat(),
        "url": incident_page_url(incident),
        "purpose": delivery.purpose,
        "text": f"{subject}\n{body}",
    }
    httpx.post(webhook, json=payload, timeout=10).raise_for_status()
