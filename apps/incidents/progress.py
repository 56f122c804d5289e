"""A job that keeps making progress is not interrupted (docs/incidents.md, A job's
condition; docs/formulas.md, Weekly effective training rate).

An interrupting incident of a job whose step progress goes on after the incident's failure
time f(i) — a step higher than any the job reported at or before f(i), with no restart of
the job before it (apps/incidents/recovery.py) — did not stop it:
the interruption recovers at the first such step (not before the incident was detected or
localised, the order of its times), its downtime ends there, and the job is `degraded`, not
`interrupted`, its MFU counting. The incident keeps what it found in `details.kept_running`
(`{step, at}`), which its page shows, and its timeline says so.

`progress_check` runs when an interrupting incident of a job is opened (a maintenance
window's planned interruption, a manual incident ticked "Interrupts the job") and, lent to
the jobs app, whenever a job's progress is recorded.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Max

from apps.incidents.choices import ACTIVE_STATUSES
from apps.incidents.models import Incident
from apps.jobs.models import JobMetric, NodeStepMetric

ACTOR = "kuae"
# Steps stamped within this long after f(i) count as before it: the failure time and the
# samples come from different clocks (a hang's f(i) is its ranks' own "last step" time,
# microseconds before the Reporter stamps that step's sample), so the step a job is stuck
# at must never read as progress past it.
GRACE = dt.timedelta(seconds=10)


@dataclass(frozen=True)
class Progress:
    """The first step a job reported after an instant that is higher than any before it."""

    step: int
    at: dt.datetime


def progress_after(job_id: int, since: dt.datetime) -> Progress | None:
    """The job's first step sample (job-wide or per node) after `since` whose step is higher
    than any it reported at or before `since` (within `GRACE` after it); None while there
    is none."""
    best: Progress | None = None
    since = since + GRACE
    for model in (JobMetric, NodeStepMetric):
        rows = model.objects.filter(job_id=job_id)
        before = rows.filter(ts__lte=since).aggregate(top=Max("step"))["top"]
        after = rows.filter(ts__gt=since)
        if before is not None:
            after = after.filter(step__gt=before)
        first = after.order_by("ts", "step").values_list("step", "ts").first()
        if first is not None and (best is None or first[1] < best.at):
            best = Progress(step=first[0], at=first[1])
    return best


@transaction.atomic
def progress_check(job_id: int) -> int:
    """Recover each open, not yet recovered interrupting incident of the job that the job's
    progress outlived; returns how many. A few queries when there is none."""
    from apps.incidents.services import incident_note, incident_update  # services call this

    open_ones = list(
        Incident.objects.select_for_update()
        .filter(
            job_id=job_id,
            interrupts_job=True,
            recovered_at__isnull=True,
            status__in=ACTIVE_STATUSES,
        )
        .order_by("pk")
    )
    from apps.incidents.recovery import restarted_at  # recovery reads progress_after here

    done = 0
    for incident in open_ones:
        went_on = progress_after(job_id, incident.failed_at)
        if went_on is None:
            continue
        restarted = restarted_at(job_id, incident.failed_at)
        if restarted is not None and restarted <= went_on.at:
            continue  # it restarted and caught up: the road back (apps/incidents/recovery.py)
        floor = max(t for t in (incident.detected_at, incident.localized_at) if t is not None)
        incident.details = {
            **incident.details,
            "kept_running": {"step": went_on.step, "at": went_on.at.isoformat()},
        }
        incident_update(
            incident=incident, changes={"recovered_at": max(went_on.at, floor)}, actor=ACTOR
        )
        incident_note(
            incident=incident,
            kind="note",
            actor=ACTOR,
            text=(
                f"The job kept running: it reported step {went_on.step:,} at "
                f"{went_on.at.astimezone(dt.UTC):%Y-%m-%d %H:%M:%SZ}, higher than any before "
                "this incident, so it was not interrupted; its downtime ends there."
            ),
        )
        done += 1
    return done
