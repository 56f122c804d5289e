"""Open incidents of jobs and nodes, and the condition of a job
(docs/incidents.md, A job's condition).

An incident is open while its status is open, investigating or mitigated. A job is `hung`
while an open `hang` incident of the job is not yet recovered, `interrupted` while another
open incident that interrupts it is not yet recovered, `degraded` while any open incident
names one of its nodes (or the job itself), else `ok`. Recovery (`recovered_at`) ends the
stop even before an engineer resolves the incident: the job trains again.

These readers are lent to the jobs and fleet apps (see `IncidentsConfig.ready`), which may
not import this one.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db.models import Q

from apps.fleet.readers import IncidentRef
from apps.incidents.choices import ACTIVE_STATUSES, Category
from apps.incidents.models import Incident
from apps.jobs.choices import JobCondition
from apps.jobs.models import Job
from apps.jobs.readers import JobIncidents


@dataclass(frozen=True)
class OpenIncident:
    """What a job's condition is made of, as plain values."""

    ref: IncidentRef
    job_id: int | None
    interrupts_job: bool
    recovered: bool
    detected_at: dt.datetime


def _order(i: OpenIncident) -> tuple[str, float, int]:
    """Most severe first (sev1 < sev2 in text order), then newest."""
    return (i.ref.severity, -i.detected_at.timestamp(), -i.ref.id)


def job_condition(
    *, job_id: int, incidents: Iterable[OpenIncident], on_its_nodes: Iterable[int] = ()
) -> JobIncidents:
    """A job's condition and open incidents, from the open incidents of the job and the ids
    of those naming one of its nodes. Pure."""
    named = set(on_its_nodes)
    mine = sorted((i for i in incidents if i.job_id == job_id or i.ref.id in named), key=_order)
    own = [i for i in mine if i.job_id == job_id and not i.recovered]
    hang = next((i for i in own if i.ref.category == Category.HANG), None)
    stop = next((i for i in own if i.interrupts_job and i.ref.category != Category.HANG), None)
    refs = tuple(i.ref for i in mine)
    if hang is not None:
        return JobIncidents(JobCondition.HUNG, refs, hang.ref)
    if stop is not None:
        return JobIncidents(JobCondition.INTERRUPTED, refs, stop.ref)
    return JobIncidents(JobCondition.DEGRADED if refs else JobCondition.OK, refs)


def job_incidents(job_ids: Sequence[int]) -> dict[int, JobIncidents]:
    """job id → condition and open incidents, in two queries for any number of jobs."""
    if not job_ids:
        return {}
    on_nodes: dict[int, set[int]] = defaultdict(set)  # job → open incidents naming its nodes
    for job_id, incident_id in (
        Job.nodes.through.objects.filter(
            job_id__in=job_ids, node__incidents__status__in=ACTIVE_STATUSES
        )
        .values_list("job_id", "node__incidents")
        .distinct()
    ):
        on_nodes[job_id].add(incident_id)
    named = set().union(*on_nodes.values()) if on_nodes else set()
    rows = (
        Incident.objects.filter(status__in=ACTIVE_STATUSES)
        .filter(Q(job_id__in=job_ids) | Q(pk__in=named))
        .values_list(
            "pk",
            "category",
            "severity",
            "title",
            "job_id",
            "interrupts_job",
            "recovered_at",
            "detected_at",
        )
    )
    near = [
        OpenIncident(
            IncidentRef(pk, category, severity, title),
            job_id,
            interrupts,
            recovered is not None,
            detected,
        )
        for pk, category, severity, title, job_id, interrupts, recovered, detected in rows
    ]
    return {
        pk: job_condition(job_id=pk, incidents=near, on_its_nodes=on_nodes.get(pk, ()))
        for pk in job_ids
    }


def node_incidents(node_ids: Sequence[int]) -> dict[int, list[IncidentRef]]:
    """node id → the open incidents naming it, most severe first, in one query."""
    out: dict[int, list[IncidentRef]] = defaultdict(list)
    rows = (
        Incident.nodes.through.objects.filter(
            node_id__in=list(node_ids), incident__status__in=ACTIVE_STATUSES
        )
        .order_by("incident__severity", "-incident__detected_at", "-incident_id")
        .values_list(
            "node_id", "incident_id", "incident__category", "incident__severity", "incident__title"
        )
    )
    for node_id, pk, category, severity, title in rows:
        out[node_id].append(IncidentRef(pk, category, severity, title))
    return dict(out)
