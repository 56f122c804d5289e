"""Reads of incidents for pages."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import F, QuerySet
from django.utils import timezone

from apps.fleet.models import Node
from apps.incidents.models import ActionItem, Incident, UnroutedAlert
from apps.jobs.models import Job

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


def action_items(*, state: str = "open", owner: str = "") -> QuerySet[ActionItem]:
    """Action items with their incident: `open` (overdue first, by due date), `overdue`,
    `done` or `all`; optionally one owner's."""
    items = ActionItem.objects.select_related("owner", "postmortem__incident")
    today = timezone.now().date()
    if state == "overdue":
        items = items.filter(done=False, due__lt=today)
    elif state == "open":
        items = items.filter(done=False)
    elif state == "done":
        items = items.filter(done=True)
    if owner:
        items = items.filter(owner__username=owner)
    return items.order_by(F("due").asc(nulls_last=True), "id")


def overdue_count() -> int:
    """How many action items are past due and not done."""
    return ActionItem.objects.filter(done=False, due__lt=timezone.now().date()).count()


def unrouted_alerts(*, status: str = "") -> QuerySet[UnroutedAlert]:
    """Alertmanager alerts kept without an incident, optionally only `firing` or `resolved`."""
    alerts = UnroutedAlert.objects.all()
    if status in UnroutedAlert.Status.values:
        alerts = alerts.filter(status=status)
    return alerts


def unrouted_firing_count() -> int:
    """How many unrouted alerts are still firing."""
    return UnroutedAlert.objects.filter(status=UnroutedAlert.Status.FIRING).count()


def job_interruptions(job_id: int, limit: int) -> list[tuple[dt.datetime, dt.datetime | None]]:
    """The incidents that interrupted a job as (f(i), recovery or None), newest first, at
    most `limit` (one query; lent to the jobs app for its progress chart)."""
    rows = (
        Incident.objects.filter(job_id=job_id, interrupts_job=True)
        .order_by("-detected_at")
        .values_list("occurred_at", "detected_at", "recovered_at")[:limit]
    )
    return [(occurred or detected, recovered) for occurred, detected, recovered in rows]


def nodes_not_of_job(*, job: Job, nodes: Sequence[Node]) -> str:
    """Why `nodes` cannot be filed against `job`: a sentence naming each node that is not one
    of the job's, with the other running job it carries if any (docs/incidents.md, Filing);
    blank when every node is the job's. An incident naming a job with another job's nodes
    would mark that other job degraded and count innocent nodes as lemons."""
    own = set(job.nodes.values_list("pk", flat=True))
    strangers = [n for n in nodes if n.pk not in own]
    if not strangers:
        return ""
    running: dict[int, list[str]] = {}
    for node_id, name, pk in (
        Job.nodes.through.objects.filter(node__in=strangers, job__status="running")
        .exclude(job=job)
        .order_by("job_id")
        .values_list("node_id", "job__name", "job_id")
    ):
        running.setdefault(node_id, []).append(f"{name} (#{pk})")
    parts = []
    for node in strangers[:20]:
        others = running.get(node.pk)
        parts.append(
            f"{node.hostname} runs {', '.join(others)}"
            if others
            else f"{node.hostname} runs no other job"
        )
    more = f" and {len(strangers) - 20} more" if len(strangers) > 20 else ""
    return (
        f"not nodes of job {job.name} (#{job.pk}): {'; '.join(parts)}{more}. "
        "Name only the job's nodes, or file the other job's failure against that job."
    )
