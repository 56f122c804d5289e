"""What incidents have cost at the moment they are read
(docs/incidents.md, What it cost, at the moment it is read).

An incident that is not yet recovered keeps costing: its downtime runs to the instant of
the read. Every surface — the incident list and page, the job page, the weekly report, the
API — takes one `now` per request and reads the cost through `costs_at` (the figures shown)
or `cost_order` (the same formula in SQL, to sort by). The stored columns are the cost as
of the incident's last change; rework is fixed at the failure, so the stored `rework_s` is
read as is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

from django.db.models import Case, F, FloatField, QuerySet, Value, When
from django.db.models.expressions import CombinedExpression, Expression
from django.db.models.functions import Cast, Coalesce, Greatest

from apps.common.dbfuncs import Epoch
from apps.incidents.impact import Impact, cost_at
from apps.incidents.models import Incident
from apps.jobs.models import Job

HOUR = 3600.0


def cost_order(now: dt.datetime) -> Expression:
    """Lost GPU-hours at `now` as an SQL expression (the formula of `impact.cost_at`), for
    sorting by cost: downtime to recovery, else the interrupted job's end, else `now`."""
    interrupting = When(interrupts_job=True, job__isnull=False, then=F("job__ended_at"))
    until = Coalesce("recovered_at", Case(interrupting), Value(now))
    failed = Coalesce("occurred_at", "detected_at")
    downtime = Greatest(Epoch(until) - Epoch(failed), Value(0.0), output_field=FloatField())
    gpus = Case(
        When(interrupts_job=True, job__isnull=False, then=Cast("job__gpu_count", FloatField())),
        default=Value(0.0),
        output_field=FloatField(),
    )
    return CombinedExpression(
        gpus * (downtime + F("rework_s")), "/", Value(HOUR), output_field=FloatField()
    )


def with_cost_order(incidents: QuerySet[Incident], *, now: dt.datetime) -> QuerySet[Incident]:
    """The queryset annotated with `cost_now` (lost GPU-hours at `now`) to order by."""
    return incidents.annotate(cost_now=cost_order(now))


def costs_at(incidents: Iterable[Incident], *, now: dt.datetime) -> list[Incident]:
    """Set each incident's `downtime_s`, `rework_s` and `lost_gpu_hours` to its cost at `now`
    (in memory, not saved); the interrupted jobs not already loaded are read in one query."""
    incidents = list(incidents)
    job_field = Incident._meta.get_field("job")
    missing = {
        i.job_id
        for i in incidents
        if i.interrupts_job and i.job_id is not None and not job_field.is_cached(i)
    }
    facts = {
        pk: (gpus, ended)
        for pk, gpus, ended in Job.objects.filter(pk__in=missing).values_list(
            "pk", "gpu_count", "ended_at"
        )
    }
    for incident in incidents:
        gpus, ended = None, None
        if incident.interrupts_job and incident.job_id is not None:
            if incident.job_id in facts:
                gpus, ended = facts[incident.job_id]
            elif incident.job is not None:
                gpus, ended = incident.job.gpu_count, incident.job.ended_at
        cost = cost_at(
            failed_at=incident.failed_at,
            recovered_at=incident.recovered_at,
            job_ended_at=ended,
            now=now,
            rework_s=incident.rework_s,
            job_gpus=gpus,
        )
        incident.downtime_s, incident.lost_gpu_hours = cost.downtime_s, cost.lost_gpu_hours
    return incidents


def costs_by_id(ids: Sequence[int], *, now: dt.datetime) -> dict[int, Impact]:
    """Each incident's cost at `now`, in one query."""
    rows = Incident.objects.filter(pk__in=list(ids)).select_related("job")
    return {
        i.pk: Impact(i.downtime_s, i.rework_s, i.lost_gpu_hours) for i in costs_at(rows, now=now)
    }
