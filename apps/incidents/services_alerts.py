"""Alertmanager intake (`POST ingest/alertmanager/`, docs/alertmanager.md): every alert of a
well-formed webhook is kept — on an incident, or as an unrouted alert — never refused.

One incident per fingerprint while it fires is held by the database, not by reading
first: `AlertFingerprint.fingerprint` is unique, so of two deliveries that race to open
the same alert (an HA pair sends each notification twice at once) one inserts and the
other gets an IntegrityError, rolls back its savepoint and updates what the first made.
Existing fingerprints are read `FOR UPDATE` in fingerprint order, so concurrent webhooks
queue behind each other per alert instead of deadlocking; only those rows are locked (not
the incidents, which health checks write too), and the incidents are read once they are.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.common.limits import UNROUTED_ALERTS_KEPT
from apps.fleet.models import Cluster, Node
from apps.incidents import silences
from apps.incidents.alertmanager import OUR_SOURCE, Alert, parse_webhook
from apps.incidents.choices import ACTIVE_STATUSES, IncidentStatus, Source
from apps.incidents.models import AlertFingerprint, Incident, TimelineEntry, UnroutedAlert
from apps.incidents.services import incident_note, incident_open, incident_refresh_impact

MAX_OPENED = 200  # docs/operations.md, Limits: incidents opened per webhook
ACTOR = "alertmanager"
NOT_PLACED = "names no known node (node, hostname, Hostname, instance) and no known cluster"
OUT_OF_SCOPE = "for a cluster its sender's token does not write for"
OVER_CAP = (
    f"its webhook had already opened {MAX_OPENED} incidents; "
    "opened when Alertmanager sends it again"
)

log = logging.getLogger(__name__)


def _note(incident: Incident, now: dt.datetime, text: str) -> None:
    """A line from Alertmanager in the incident's timeline."""
    incident_note(
        incident=incident, kind=TimelineEntry.Kind.UPDATED, actor=ACTOR, at=now, text=text
    )


@dataclass(frozen=True)
class Placed:
    """Where an alert belongs: a node (and so its cluster), or only a cluster, or nowhere."""

    node: Node | None
    cluster: Cluster | None


def alerts_place(alerts: Sequence[Alert]) -> dict[str, Placed]:
    """Place each alert (by fingerprint): the first node label naming a known node — by
    hostname, short name or one of the node's `addresses` — gives the node and its cluster;
    else the `cluster` label names a known cluster; else nowhere. Two or three queries."""
    names = {name for a in alerts for names in a.node_candidates for name in names}
    nodes = {
        n.hostname: n for n in Node.objects.select_related("cluster").filter(hostname__in=names)
    }

    def by_hostname(alert: Alert) -> bool:
        return any(name in nodes for names in alert.node_candidates for name in names)

    by_address: dict[str, Node] = {}
    if any(a.node_candidates and not by_hostname(a) for a in alerts):
        # Few nodes carry addresses and this runs only for alerts no hostname matched; a
        # JSON containment query would not be portable to SQLite.
        owners = {
            address: pk
            for pk, addresses in Node.objects.exclude(addresses=[]).values_list("pk", "addresses")
            for address in addresses
            if address in names
        }
        found = Node.objects.select_related("cluster").in_bulk(set(owners.values()))
        by_address = {address: found[pk] for address, pk in owners.items() if pk in found}
    clusters = Cluster.objects.in_bulk(
        {a.cluster_label for a in alerts if a.cluster_label}, field_name="name"
    )
    out = {}
    for alert in alerts:
        node = next(
            (
                nodes.get(name) or by_address.get(name)
                for names in alert.node_candidates
                for name in names
                if name in nodes or name in by_address
            ),
            None,
        )
        cluster = node.cluster if node is not None else clusters.get(alert.cluster_label)
        out[alert.fingerprint] = Placed(node, cluster)
    return out


@transaction.atomic
def alertmanager_ingest(
    *, payload: object, now: dt.datetime | None = None, within: int | None = None
) -> dict[str, int]:
    """Apply one webhook; returns what happened to its alerts: `opened`, `updated`,
    `reopened`, `folded` (into a check's incident), `resolved`, `unrouted` (placed nowhere, or,
    from a token scoped to cluster id `within`, placed in or feeding an incident of another),
    `deferred` (over the 200-incidents bound: kept as unrouted until sent again), `silenced`
    (naming a node of a maintenance window in progress: kept on the window, no incident —
    docs/maintenance.md), `ignored` (a stale or repeated copy, or KUAE's own alert, labelled
    `source="kuae"`, come back through a site's Alertmanager)."""
    now = now or timezone.now()
    counts: Counter[str] = Counter()
    alerts = {}
    for alert in parse_webhook(payload):
        if alert.labels.get("source") == OUR_SOURCE:
            # KUAE's own alert come back (docs/alertmanager.md, Alerts out): never an incident.
            counts["ignored"] += 1
            continue
        alerts[alert.fingerprint] = alert  # the last copy wins
    ordered = [alerts[fp] for fp in sorted(alerts)]
    placed = alerts_place(ordered)
    links = _links_locked(list(alerts))
    on_incident = set(
        Incident.nodes.through.objects.filter(
            incident_id__in={link.incident_id for link in links.values()}
        ).values_list("incident_id", "node_id")
    )
    kept_unrouted = set(
        UnroutedAlert.objects.filter(fingerprint__in=list(alerts)).values_list(
            "fingerprint", flat=True
        )
    )

    def in_scope(where: Placed, link: AlertFingerprint | None) -> bool:
        return where.cluster is not None and (
            within is None
            or {where.cluster.pk, link.incident.cluster_id if link else within} == {within}
        )

    # An alert on a node under maintenance that feeds no incident yet is kept on the window.
    quiet = silences.silenced(
        [
            (alert, node)
            for alert in ordered
            if (node := placed[alert.fingerprint].node) is not None
            and alert.fingerprint not in links
            and in_scope(placed[alert.fingerprint], None)
        ],
        now,
    )
    for alert in ordered:
        where, link = placed[alert.fingerprint], links.get(alert.fingerprint)
        if not in_scope(where, link):
            reason = NOT_PLACED if where.cluster is None else OUT_OF_SCOPE
            unrouted_alert_upsert(alert=alert, reason=reason, now=now)
            counts["unrouted"] += 1
            continue
        if alert.fingerprint in quiet:
            counts["silenced"] += 1
            if alert.fingerprint in kept_unrouted:
                UnroutedAlert.objects.filter(fingerprint=alert.fingerprint).delete()
            continue
        outcome = _apply(
            alert,
            where,
            link,
            on_incident,
            may_open=counts["opened"] < MAX_OPENED,
            now=now,
        )
        counts[outcome] += 1
        if outcome == "deferred":
            unrouted_alert_upsert(alert=alert, reason=OVER_CAP, now=now)
        elif alert.fingerprint in kept_unrouted:
            UnroutedAlert.objects.filter(fingerprint=alert.fingerprint).delete()
    keys = (
        "opened",
        "updated",
        "reopened",
        "folded",
        "resolved",
        "unrouted",
        "deferred",
        "silenced",
    )
    return {key: counts[key] for key in (*keys, "ignored")}


def _links_locked(fingerprints: list[str]) -> dict[str, AlertFingerprint]:
    """The fingerprints' rows, locked in fingerprint order, with their incidents read after
    the locks are held: a row read while waiting for another delivery's lock is re-read
    when that lock goes, but a joined row would not be — the incident must come fresh."""
    links = {
        link.fingerprint: link
        for link in AlertFingerprint.objects.select_for_update(of=("self",))
        .filter(fingerprint__in=fingerprints)
        .order_by("fingerprint")
    }
    incidents = Incident.objects.in_bulk({link.incident_id for link in links.values()})
    for link in links.values():
        link.incident = incidents[link.incident_id]
    return links


def _apply(
    alert: Alert,
    where: Placed,
    link: AlertFingerprint | None,
    on_incident: set[tuple[int, int]],
    *,
    may_open: bool,
    now: dt.datetime,
) -> str:
    if link is None:
        if not alert.firing:
            return "ignored"  # the resolution of an alert never seen firing
        try:
            with transaction.atomic():
                return _start(alert, where, None, may_open=may_open, now=now)
        except IntegrityError:
            # A concurrent delivery of the same alert inserted its fingerprint first; wait for
            # it (the row lock) and apply this copy on top of what it did.
            link = _links_locked([alert.fingerprint])[alert.fingerprint]
            on_incident.update(
                (link.incident_id, pk) for pk in link.incident.nodes.values_list("pk", flat=True)
            )
    return _follow(alert, where, link, on_incident, may_open=may_open, now=now)


def _start(
    alert: Alert,
    where: Placed,
    link: AlertFingerprint | None,
    *,
    may_open: bool,
    now: dt.datetime,
) -> str:
    """A new firing: fold into a check's open incident for the same (category, node), else
    open an incident (within the bound); record which incident the fingerprint feeds."""
    target = _check_incident(alert, where.node)
    if target is None and not may_open:
        return "deferred"
    incident = target or _open(alert, where)
    if target is not None:
        _note(
            target,
            now,
            f"Alertmanager alert {_describe(alert)} fires for the same problem: "
            "folded into this incident",
        )
    if link is None:
        AlertFingerprint.objects.create(
            fingerprint=alert.fingerprint, incident=incident, starts_at=alert.starts_at
        )
    else:
        link.incident, link.starts_at, link.ends_at = incident, alert.starts_at, None
        link.save()
    return "folded" if target is not None else "opened"


def _follow(
    alert: Alert,
    where: Placed,
    link: AlertFingerprint,
    on_incident: set[tuple[int, int]],
    *,
    may_open: bool,
    now: dt.datetime,
) -> str:
    """An alert whose fingerprint is known: the same firing updates (or re-opens) its
    incident, a later firing starts anew, a resolution resolves what the alert opened."""
    incident = link.incident
    active = incident.status in ACTIVE_STATUSES
    same_firing = alert.starts_at <= link.starts_at
    if not alert.firing:
        if link.ends_at is not None:
            return "ignored"
        link.ends_at = max(alert.ends_at or now, link.starts_at)
        link.save(update_fields=["ends_at", "updated_at"])
        if active:
            _resolved(alert, incident, link.ends_at, now)
        return "resolved"
    if link.ends_at is not None and same_firing:
        return "ignored"  # a late copy of a firing that has since resolved
    if not same_firing:  # a later firing (a resolution was missed, or it resolved)
        if not active:
            return _start(alert, where, link, may_open=may_open, now=now)
        link.starts_at, link.ends_at = alert.starts_at, None
        link.save(update_fields=["starts_at", "ends_at", "updated_at"])
    if not active:
        _reopen(alert, incident, now)
        return "reopened"
    node = where.node
    if node is not None and (incident.pk, node.pk) not in on_incident:
        incident.nodes.add(node)
        on_incident.add((incident.pk, node.pk))
        _note(incident, now, f"alert {_describe(alert)} also names {node.hostname}")
    return "updated"


def _check_incident(alert: Alert, node: Node | None) -> Incident | None:
    """The open incident a health check keeps for this (category, node), if any."""
    if node is None:
        return None
    return (
        Incident.objects.filter(
            source=Source.HEALTH,
            status__in=ACTIVE_STATUSES,
            category=alert.category,
            nodes=node,
        )
        .order_by("-detected_at", "-id")
        .first()
    )


def _gpu(alert: Alert) -> dict[str, str]:
    return {k: v for k, v in (("gpu", alert.gpu), ("gpu_uuid", alert.gpu_uuid)) if v}


def _describe(alert: Alert) -> str:
    gpu = _gpu(alert)
    where = f" GPU {gpu.get('gpu', '')} {gpu.get('gpu_uuid', '')}".rstrip() if gpu else ""
    return f"{alert.name or alert.title} ({alert.fingerprint}){where}"


def _open(alert: Alert, where: Placed) -> Incident:
    assert where.cluster is not None
    return incident_open(
        cluster=where.cluster,
        title=alert.title,
        category=alert.category,
        severity=alert.severity,
        occurred_at=alert.starts_at,
        detected_at=alert.starts_at,
        nodes=[where.node] if where.node else [],
        description=alert.description,
        source=Source.ALERTMANAGER,
        fingerprint=f"am:{alert.fingerprint}",
        details={**_gpu(alert), "alertname": alert.name, "labels": alert.labels},
        actor=ACTOR,
    )


def _resolved(alert: Alert, incident: Incident, ended: dt.datetime, now: dt.datetime) -> None:
    """The alert resolved: an incident it opened resolves with it; a check's incident it
    folded into stays for the check (or an engineer) and only notes it."""
    if incident.fingerprint != f"am:{alert.fingerprint}":
        _note(incident, now, f"alert {_describe(alert)} resolved at {ended.isoformat()}")
        return
    # Never before a time the incident already has (the times stay in order:
    # docs/incidents.md, Times).
    times = (incident.detected_at, incident.localized_at, incident.recovered_at)
    ended = max(ended, *(t for t in times if t is not None))
    incident.status = IncidentStatus.RESOLVED
    incident.resolved_at = ended
    incident.recovered_at = incident.recovered_at or ended
    incident.save(update_fields=["status", "resolved_at", "recovered_at", "updated_at"])
    incident_refresh_impact(incident=incident, now=now)
    _note(incident, now, f"alert resolved at {ended.isoformat()}")


def _reopen(alert: Alert, incident: Incident, now: dt.datetime) -> None:
    """Resolved by a person (or a check) while the alert kept firing: open it again."""
    was = incident.status  # the stored note stays English: a status's label is its value
    incident.status = IncidentStatus.OPEN
    incident.resolved_at = None
    incident.save(update_fields=["status", "resolved_at", "updated_at"])
    incident_refresh_impact(incident=incident, now=now)
    _note(
        incident,
        now,
        f"re-opened: it was {was}, but alert {_describe(alert)} is still firing "
        f"(since {alert.starts_at.isoformat()})",
    )


def unrouted_alert_upsert(*, alert: Alert, reason: str, now: dt.datetime) -> None:
    """Keep an alert without an incident, one row per fingerprint: the latest delivery's
    labels, status and times win, `deliveries` counts them (also when two race). A new
    fingerprint is not kept while UNROUTED_ALERTS_KEPT are (it is still counted in the
    webhook's answer); retention removes those not delivered again for
    KUAE_RETAIN_UNROUTED_DAYS."""
    values = {
        "labels": alert.labels,
        "annotations": alert.annotations,
        "status": UnroutedAlert.Status.FIRING if alert.firing else UnroutedAlert.Status.RESOLVED,
        "starts_at": alert.starts_at,
        "ends_at": alert.ends_at,
        "received_at": now,
        "reason": reason[:200],
    }
    rows = UnroutedAlert.objects.filter(fingerprint=alert.fingerprint)
    if rows.update(deliveries=F("deliveries") + 1, **values):
        return
    if UnroutedAlert.objects.count() >= UNROUTED_ALERTS_KEPT:
        log.warning("unrouted alert %s not kept: %s are", alert.fingerprint, UNROUTED_ALERTS_KEPT)
        return
    try:
        with transaction.atomic():
            UnroutedAlert.objects.create(
                fingerprint=alert.fingerprint, first_received_at=now, deliveries=1, **values
            )
    except IntegrityError:
        rows.update(deliveries=F("deliveries") + 1, **values)
