"""Writes to incidents (the full lifecycle, timeline and postmortems build on this)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from apps.common.dbconflicts import rows_key_share
from apps.fleet.models import Cluster, Node
from apps.incidents.choices import Category, IncidentStatus, Severity, Source
from apps.incidents.impact import Impact, impact
from apps.incidents.models import Incident, TimelineEntry
from apps.incidents.progress import progress_check
from apps.incidents.recovery import road_fill
from apps.incidents.services_notify import deliveries_queue
from apps.jobs.models import Job

# occurred ≤ detected ≤ localized ≤ recovered ≤ resolved, each only when both are set.
CHAIN = ("occurred_at", "detected_at", "localized_at", "recovered_at", "resolved_at")
# The road back from an interruption (docs/incidents.md, The road back): each at or after the
# failure, and restarted ≤ restored ≤ caught up.
ROAD = ("mitigated_at", "restarted_at", "restored_at", "caught_up_at")
# Every time an incident carries, in the order its page shows them.
TIMES = (
    "occurred_at",
    "detected_at",
    "localized_at",
    *ROAD[:3],
    "recovered_at",
    ROAD[3],
    "resolved_at",
)


# `details` key: the road-back times (and `recovered_at`) a person set, which KUAE's own
# filling never overwrites (apps/incidents/recovery.py).
BY_PERSON = "times_by_person"
FILLED = frozenset({*ROAD, "recovered_at"})

PAGE_SEVERITIES = frozenset({Severity.SEV1, Severity.SEV2})
PAGE_WITHIN = dt.timedelta(hours=24)


def _worth_paging(incident: Incident) -> bool:
    """A new sev1/sev2 pages people; back-filled history and the simulator's do not."""
    return (
        incident.severity in PAGE_SEVERITIES
        and incident.source != Source.SIMULATOR
        and timezone.now() - incident.detected_at < PAGE_WITHIN
    )


def validate_times(times: dict[str, dt.datetime | None]) -> None:
    """Raise a ValidationError naming the field that comes before an earlier one."""
    errors: dict[str, list[str]] = {}
    for chain in (CHAIN, ROAD[1:]):
        for i, later in enumerate(chain):
            for earlier in chain[:i]:
                a, b = times.get(earlier), times.get(later)
                if a is not None and b is not None and b < a:
                    errors.setdefault(later, []).append(f"is before {earlier}")
    failed = times.get("occurred_at") or times.get("detected_at")
    for field in ROAD:
        at = times.get(field)
        if at is not None and failed is not None and at < failed:
            errors.setdefault(field, []).append(
                "is before the failure (occurred_at, else detected_at)"
            )
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
    mitigated_at: dt.datetime | None = None,
    restarted_at: dt.datetime | None = None,
    restored_at: dt.datetime | None = None,
    caught_up_at: dt.datetime | None = None,
    status: str = IncidentStatus.OPEN,
    job: Job | None = None,
    nodes: Sequence[Node] = (),
    interrupts_job: bool = False,
    planned: bool = False,
    description: str = "",
    assignee: str = "",
    source: str = Source.MANUAL,
    fingerprint: str = "",
    details: dict[str, object] | None = None,
    actor: str = "",
) -> Incident:
    """Open an incident after checking its category, severity and the order of its times;
    `assignee` is a username (the API checks it names an active user), blank for nobody."""
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
            "mitigated_at": mitigated_at,
            "restarted_at": restarted_at,
            "restored_at": restored_at,
            "caught_up_at": caught_up_at,
        }
    )
    road = {
        "mitigated_at": mitigated_at,
        "restarted_at": restarted_at,
        "restored_at": restored_at,
        "caught_up_at": caught_up_at,
    }
    details = dict(details or {})
    if source == Source.MANUAL:  # a person filed it: the times they gave are theirs
        given = [f for f, at in (*road.items(), ("recovered_at", recovered_at)) if at]
        if given:
            details[BY_PERSON] = given
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
        **road,
        job=job,
        interrupts_job=interrupts_job,
        planned=planned,
        description=description,
        assignee=assignee,
        source=source,
        fingerprint=fingerprint,
        details=details,
    )
    if nodes:
        rows_key_share(Node, [n.pk for n in nodes])  # nodes by pk (docs/architecture.md, Locks)
        incident.nodes.set(nodes)
    incident_refresh_impact(incident=incident)
    if _worth_paging(incident):
        deliveries_queue(incident=incident)
    TimelineEntry.objects.create(
        incident=incident,
        kind=TimelineEntry.Kind.OPENED,
        actor=actor or source,
        # when it was filed; the failure's own time stays occurred_at (a simulated past keeps
        # its own clock)
        at=detected_at if source == Source.SIMULATOR else timezone.now(),
        text=description or title,
    )
    if interrupts_job and job is not None and recovered_at is None:
        progress_check(job.pk)  # the job may have gone on since it began (docs/incidents.md)
        incident.refresh_from_db()
    if interrupts_job and not planned:  # or restarted, or its node was drained already
        road_fill(incident)
    return incident


def incident_note(
    *, incident: Incident, kind: str, text: str, actor: str, at: dt.datetime | None = None
) -> TimelineEntry:
    """Add a line to an incident's timeline."""
    return TimelineEntry.objects.create(
        incident=incident, kind=kind, text=text[:5000], actor=actor, at=at or timezone.now()
    )


def incident_fold(
    *,
    incident: Incident,
    nodes: Sequence[Node] = (),
    details: dict[str, object] | None = None,
    localized_at: dt.datetime | None = None,
) -> Incident:
    """Fold a later sighting of an open incident's fault into it, as a check does when it
    sees the fault again (docs/checks.md, Storms): link `nodes` (those it names already stay),
    merge `details` into its details, and set `localized_at` if it has none yet (the first
    time the fault is placed). One UPDATE of the row at most, no timeline line: the caller
    notes what the sighting means in its own words (`incident_note`)."""
    if nodes:
        rows_key_share(Node, [n.pk for n in nodes])  # docs/architecture.md, Locks
        incident.nodes.add(*nodes)
    changed: dict[str, object] = {}
    if details:
        incident.details = changed["details"] = {**incident.details, **details}
    if localized_at is not None and incident.localized_at is None:
        incident.localized_at = changed["localized_at"] = localized_at
    if changed:
        Incident.objects.filter(pk=incident.pk).update(**changed)
    return incident


EDITABLE = (
    "title",
    "category",
    "severity",
    "status",
    *TIMES,
    "job",
    "interrupts_job",
    "planned",
    "description",
    "assignee",
)


@transaction.atomic
def incident_update(
    *,
    incident: Incident,
    changes: dict[str, object],
    actor: str,
    nodes: Sequence[Node] | None = None,
    by_person: bool = False,
) -> Incident:
    """Apply changes, check the order of the times, and write one timeline line naming every
    field that changed (old → new) and who changed it. `by_person`: a person made them, so
    the road-back times among them are theirs from now on (`details.times_by_person`)."""
    now = timezone.now()
    before = {f: getattr(incident, f) for f in EDITABLE}
    for field, value in changes.items():
        if field in EDITABLE:
            setattr(incident, field, value)
    if (
        incident.status in (IncidentStatus.RESOLVED, IncidentStatus.CLOSED)
        and not incident.resolved_at
    ):
        incident.resolved_at = max(now, incident.detected_at)
    if incident.category not in Category.values:
        raise ValidationError({"category": [f"unknown category {incident.category!r}"]})
    validate_times({f: getattr(incident, f) for f in TIMES})
    said = [
        f"{f}: {_show(before[f])} → {_show(getattr(incident, f))}"
        for f in EDITABLE
        if getattr(incident, f) != before[f]
    ]
    if nodes is not None:
        old = sorted(incident.nodes.values_list("hostname", flat=True))
        new = sorted(n.hostname for n in nodes)
        if old != new:
            rows_key_share(Node, [n.pk for n in nodes])  # docs/architecture.md, Locks
            incident.nodes.set(nodes)
            said.append(f"nodes: {', '.join(old) or '—'} → {', '.join(new) or '—'}")
    if by_person:
        mine = {f for f in FILLED if f in changes and getattr(incident, f) != before[f]}
        if mine:
            kept = set(incident.details.get(BY_PERSON) or [])
            incident.details = {**incident.details, BY_PERSON: sorted(kept | mine)}
    if said:
        incident.save()
        incident_refresh_impact(incident=incident)
        incident_note(
            incident=incident,
            kind=TimelineEntry.Kind.UPDATED,
            actor=actor,
            at=now,
            text="; ".join(said),
        )
    return incident


def _show(value: object) -> str:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    if isinstance(value, Job):
        return f"job {value.pk}"
    return "—" if value in (None, "") else str(value)


def incident_refresh_impact(*, incident: Incident, now: dt.datetime | None = None) -> Impact:
    """Recompute and store what the incident cost (one query for the job's checkpoints)."""
    now = now or timezone.now()
    job = incident.job if incident.interrupts_job else None
    checkpoints = (
        list(
            job.checkpoints.filter(saved_at__lte=incident.failed_at).values_list(
                "saved_at", "blocking_s"
            )
        )
        if job
        else []
    )
    earlier = []
    if job is not None:
        others = Incident.objects.filter(job=job, interrupts_job=True).exclude(pk=incident.pk)
        for occurred, detected, recovered in others.values_list(
            "occurred_at", "detected_at", "recovered_at"
        ):
            failed = occurred or detected
            if failed < incident.failed_at:
                earlier.append((failed, recovered or incident.failed_at))
    cost = impact(
        failed_at=incident.failed_at,
        recovered_at=incident.recovered_at,
        now=now,
        planned=incident.planned,
        job_gpus=job.gpu_count if job else None,
        job_started_at=job.started_at if job else None,
        job_ended_at=job.ended_at if job else None,
        checkpoints=checkpoints,
        earlier_downtimes=earlier,
    )
    Incident.objects.filter(pk=incident.pk).update(
        downtime_s=cost.downtime_s, rework_s=cost.rework_s, lost_gpu_hours=cost.lost_gpu_hours
    )
    incident.downtime_s, incident.rework_s = cost.downtime_s, cost.rework_s
    incident.lost_gpu_hours = cost.lost_gpu_hours
    return cost
