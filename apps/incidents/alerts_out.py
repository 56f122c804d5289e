"""Alerts out (docs/alertmanager.md, Alerts out): KUAE posts what is wrong to a site's own
Alertmanager(s), `POST {KUAE_ALERTMANAGER_URL}/api/v2/alerts`.

The alert set is what the producers return now — every open incident as a `KuaeIncident`
alert (`incident_alerts`); another kind is one more producer (`producer_add`). Each tick:

1. `alerts_out_round` writes the outbox (`AlertPost`, one row per alert label set and
   Alertmanager): a new alert, or one whose annotations or start changed, is due now; one
   still open is re-posted every repeat period with `endsAt` = now + 4 × that period (so a
   stopped KUAE lets it lapse); an alert no longer in the set — its incident resolved, or
   its labels changed (another node named) — is posted once more with `endsAt` = now.
2. `alerts_out_drain` posts each Alertmanager's due rows in one request. A failure leaves
   them pending, retried with backoff capped at the repeat period: nothing is lost, and an
   Alertmanager restarted without its storage has every open alert back within one repeat
   period. Posting twice is harmless (Alertmanager merges an alert by its labels).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.common.lending import Registry
from apps.incidents.alertmanager import OUR_SOURCE
from apps.incidents.choices import ACTIVE_STATUSES
from apps.incidents.models import AlertPost, Incident
from apps.incidents.services_notify import incident_page_url

ALERTNAME = "KuaeIncident"
# sev1 … sev4 as the severities an Alertmanager route matches on.
SEVERITY = {"sev1": "critical", "sev2": "error", "sev3": "warning", "sev4": "info"}
LAPSE_PERIODS = 4  # an open alert's endsAt: now + 4 × the repeat period
BACKOFF_FIRST_S = 5.0  # the first retry after a failed post; doubling, capped at the repeat
MAX_PER_POST = 1_000  # alerts per request to one Alertmanager
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class OutAlert:
    """One alert as KUAE wants it firing now; `subject` names what it is about
    (`incident:42`), which keeps one alert per subject however its labels change."""

    subject: str
    labels: dict[str, str]
    starts_at: dt.datetime
    annotations: dict[str, str] = field(default_factory=dict)
    generator_url: str = ""

    @property
    def key(self) -> str:
        """The alert's identity, as Alertmanager's: a hash of its whole label set."""
        return label_key(self.labels)


Producer = Callable[[dt.datetime], list[OutAlert]]


def label_key(labels: dict[str, str]) -> str:
    """sha256 (hex) of the label set, sorted: equal label sets, equal keys."""
    return hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()


def incident_alerts(now: dt.datetime) -> list[OutAlert]:
    """Every open incident as a `KuaeIncident` alert: labels alertname, severity (sev1
    critical, sev2 error, sev3 warning, sev4 info), category, cluster, incident (its id),
    node when it names exactly one node else nodes_count, source="kuae"; annotations
    summary (its title) and url (its page); startsAt its failure time."""
    out = []
    incidents = (
        Incident.objects.filter(status__in=ACTIVE_STATUSES)
        .select_related("cluster")
        .prefetch_related("nodes")
        .order_by("pk")
    )
    for incident in incidents:
        hostnames = sorted(node.hostname for node in incident.nodes.all())
        labels = {
            "alertname": ALERTNAME,
            "severity": SEVERITY.get(incident.severity, "info"),
            "category": incident.category,
            "cluster": incident.cluster.name,
            "incident": str(incident.pk),
            "source": OUR_SOURCE,
        }
        if len(hostnames) == 1:
            labels["node"] = hostnames[0]
        else:
            labels["nodes_count"] = str(len(hostnames))
        url = incident_page_url(incident)
        out.append(
            OutAlert(
                subject=f"incident:{incident.pk}",
                labels=labels,
                starts_at=min(incident.failed_at, now),
                annotations={"summary": incident.title, "url": url},
                generator_url=url,
            )
        )
    return out


# name → producer: the incidents' own, and those lent from above (a missing one stops
# start-up: apps/common/lending.py).
_lent = Registry("apps.incidents.alerts_out", lenders={"health.watchdog": "the health app"})
_lent["incidents"] = incident_alerts


def producer_add(*, name: str, producer: Producer) -> None:
    """Add a kind of alert: `producer(now)` returns the alerts of that kind firing now.
    An app above incidents lends its producer from its `AppConfig.ready()`; lending under
    the same `name` again replaces it."""
    _lent[name] = producer


def alert_set(now: dt.datetime) -> list[OutAlert]:
    """Every alert KUAE wants firing now, from every producer."""
    _lent.require()
    return [alert for producer in list(_lent.values()) for alert in producer(now)]


def alertmanagers() -> list[str]:
    """The configured Alertmanager base URLs, without a trailing slash."""
    return [url.rstrip("/") for url in settings.KUAE_ALERTMANAGER_URL]


def repeat_period() -> dt.timedelta:
    """KUAE_ALERTMANAGER_REPEAT_S as a duration."""
    return dt.timedelta(seconds=settings.KUAE_ALERTMANAGER_REPEAT_S)


def tick_s() -> float:
    """How often the beat runs a round and a drain: 10 s, or the repeat period if shorter."""
    return float(min(10, settings.KUAE_ALERTMANAGER_REPEAT_S))


def alerts_out_round(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Bring the outbox up to date with the alert set; returns how many rows were made
    `new`, `changed`, `repeated` (an open alert's periodic re-post) and `ended`."""
    now = now or timezone.now()
    urls = alertmanagers()
    counts: Counter[str] = Counter()
    with transaction.atomic():
        AlertPost.objects.exclude(alertmanager__in=urls).delete()  # no longer configured
        if not urls:
            return dict(counts)
        repeat = repeat_period()
        # Re-posted a tick early rather than a tick late: back within one repeat period.
        stale = now - repeat + dt.timedelta(seconds=tick_s())
        ends = now + LAPSE_PERIODS * repeat
        current = {alert.key: alert for alert in alert_set(now)}
        rows = {
            (row.label_key, row.alertmanager): row
            for row in AlertPost.objects.select_for_update().filter(alertmanager__in=urls)
        }
        new = []
        for key, alert in current.items():
            for url in urls:
                row = rows.get((key, url))
                if row is None:
                    new.append(
                        AlertPost(
                            subject=alert.subject,
                            label_key=key,
                            alertmanager=url,
                            labels=alert.labels,
                            annotations=alert.annotations,
                            generator_url=alert.generator_url,
                            starts_at=alert.starts_at,
                            ends_at=ends,
                            due_at=now,
                            refreshed_at=now,
                        )
                    )
                    counts["new"] += 1
                    continue
                changed = (
                    row.annotations != alert.annotations
                    or row.starts_at != alert.starts_at
                    or row.generator_url != alert.generator_url
                    or row.ends_at <= now  # ended, and firing again
                )
                if not changed and row.refreshed_at > stale:
                    continue
                counts["changed" if changed else "repeated"] += 1
                _due(
                    row,
                    now,
                    annotations=alert.annotations,
                    generator_url=alert.generator_url,
                    starts_at=alert.starts_at,
                    ends_at=ends,
                )
        for (key, _url), row in rows.items():
            if key not in current and row.ends_at > now:
                counts["ended"] += 1
                _due(row, now, ends_at=now)
        AlertPost.objects.bulk_create(new, ignore_conflicts=True)
    return dict(counts)


def _due(row: AlertPost, now: dt.datetime, **fields: object) -> None:
    """Store the row's new content and make it pending; a row already pending keeps its
    retry time (a round does not undo the backoff)."""
    for name, value in fields.items():
        setattr(row, name, value)
    if not row.pending:
        row.pending, row.due_at = True, now
    row.refreshed_at = now
    row.save(update_fields=[*fields, "pending", "due_at", "refreshed_at"])


def _payload(row: AlertPost) -> dict[str, object]:
    """The row as one alert of Alertmanager's `POST /api/v2/alerts`."""
    return {
        "labels": row.labels,
        "annotations": row.annotations,
        "startsAt": row.starts_at.isoformat(),
        "endsAt": row.ends_at.isoformat(),
        "generatorURL": row.generator_url,
    }


def backoff(attempts: int) -> dt.timedelta:
    """The wait before retrying after `attempts` failed posts in a row: 5 s, doubling,
    at most the repeat period."""
    seconds = BACKOFF_FIRST_S * 2 ** min(max(attempts - 1, 0), 20)
    return min(dt.timedelta(seconds=seconds), repeat_period())


def alerts_out_drain(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Post each Alertmanager's due rows (one request each); returns `sent` and `failed`
    row counts. A row changed by a round while it was being posted stays pending."""
    now = now or timezone.now()
    counts: Counter[str] = Counter()
    for url in alertmanagers():
        rows = list(
            AlertPost.objects.filter(alertmanager=url, pending=True, due_at__lte=now).order_by(
                "due_at", "pk"
            )[:MAX_PER_POST]
        )
        if not rows:
            continue
        try:
            response = httpx.post(
                f"{url}/api/v2/alerts", json=[_payload(r) for r in rows], timeout=TIMEOUT_S
            )
            response.raise_for_status()
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
            for row in rows:
                AlertPost.objects.filter(pk=row.pk, pending=True).update(
                    attempts=row.attempts + 1, due_at=now + backoff(row.attempts + 1), error=error
                )
            counts["failed"] += len(rows)
            continue
        for row in rows:
            # Only what was posted: a row a round moved on meanwhile goes in the next drain.
            counts["sent"] += AlertPost.objects.filter(
                pk=row.pk, refreshed_at=row.refreshed_at
            ).update(pending=False, attempts=0, error="", sent_at=timezone.now())
        # An ended alert, delivered: nothing more to say about it.
        AlertPost.objects.filter(alertmanager=url, pending=False, ends_at__lte=now).delete()
    return dict(counts)


def alerts_out_tick(*, now: dt.datetime | None = None) -> dict[str, int]:
    """One round, then one drain (the periodic task)."""
    now = now or timezone.now()
    return {**alerts_out_round(now=now), **alerts_out_drain(now=now)}
