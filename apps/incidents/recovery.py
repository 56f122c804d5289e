"""The road back from an unexpected interruption, read from what KUAE already sees
(docs/incidents.md, The road back).

- `mitigated_at`: the first change of one of the incident's nodes, at or after the failure,
  to a state that takes it out of service (drained, down, maintenance); the Slurm drain
  that KUAE sends is written with that change.
- `restarted_at`: the job's next attempt started — the earliest of a Slurm attempt that
  started after the failure, a rank of a newer attempt than the one running at the failure
  (its process's start, else its registration), a `startup` or `checkpoint_restore` phase
  begun after the failure, and a step sample after the failure whose step went back (at or
  below the highest step reached by the failure: a run restarted from a checkpoint).
- `restored_at`: the end of the first `checkpoint_restore` phase begun after the failure
  (`rep.restored(step, load_s)` posts `[now − load_s, now]`).
- `caught_up_at`: the first step after the failure higher than any before it, once the job
  has restarted (without a restart, that step means the job kept running:
  apps/incidents/progress.py).
- training resumed: `restored_at`, else the first step sample at or after the restart; it
  becomes `recovered_at` unless a person set that (not before the incident was detected or
  localised, the order of its times).

Times a person set (`details.times_by_person`) are never overwritten. `road_check` runs with
`progress_check` whenever a job's progress, ranks, phases or Slurm attempts are recorded, and
`mitigation_follow` with every node state change.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db.models import Max, Min, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.fleet.choices import NodeState
from apps.fleet.models import Node, NodeStateChange
from apps.incidents.models import Incident
from apps.incidents.progress import GRACE, progress_after
from apps.jobs.models import JobAttempt, JobMetric, JobPhase, NodeStepMetric, Rank

log = logging.getLogger(__name__)

ACTOR = "kuae"
# States that take a node out of service: a change to one of them mitigates the failure.
OUT_STATES = (NodeState.DRAINED, NodeState.DOWN, NodeState.MAINTENANCE)
RESTART_PHASES = ("startup", "checkpoint_restore")
RESTORE_PHASE = "checkpoint_restore"
# How long after its failure an interruption's road back is still looked for.
LOOK_FOR = dt.timedelta(days=14)


@dataclass(frozen=True)
class RoadBack:
    """What KUAE saw of an interruption's road back; None where it saw nothing yet."""

    mitigated_at: dt.datetime | None = None
    restarted_at: dt.datetime | None = None
    restored_at: dt.datetime | None = None
    caught_up_at: dt.datetime | None = None
    resumed_at: dt.datetime | None = None


def mitigated_at(incident: Incident) -> dt.datetime | None:
    """The first change of one of the incident's nodes to an out-of-service state at or
    after its failure; None when there is none."""
    found: dt.datetime | None = NodeStateChange.objects.filter(
        node__in=incident.nodes.all(),
        state__in=OUT_STATES,
        at__gte=incident.failed_at,
    ).aggregate(first=Min("at"))["first"]
    return found


def _earliest(*times: dt.datetime | None) -> dt.datetime | None:
    present = [t for t in times if t is not None]
    return min(present) if present else None


def _stepped_back(job_id: int, after: dt.datetime) -> dt.datetime | None:
    """The first step sample after `after` (+ GRACE) whose step is at or below the highest
    step reported by then: a run that went back to a checkpoint."""
    since = after + GRACE
    first: dt.datetime | None = None
    for model in (JobMetric, NodeStepMetric):
        rows = model.objects.filter(job_id=job_id)
        top = rows.filter(ts__lte=since).aggregate(top=Max("step"))["top"]
        if top is None:
            continue
        at = rows.filter(ts__gt=since, step__lte=top).aggregate(at=Min("ts"))["at"]
        first = _earliest(first, at)
    return first


def _new_ranks(job_id: int, after: dt.datetime) -> dt.datetime | None:
    """When the first rank of an attempt newer than the one running at `after` started
    (its process's start, else its registration)."""
    ranks = Rank.objects.filter(job_id=job_id)
    running = ranks.filter(registered_at__lte=after + GRACE).aggregate(a=Max("attempt"))["a"]
    found: dt.datetime | None = (
        ranks.filter(attempt__gt=max(running or 1, 1))
        .annotate(began=Coalesce("started_at", "registered_at"))
        .filter(began__gt=after)
        .aggregate(first=Min("began"))["first"]
    )
    return found


def restarted_at(job_id: int, after: dt.datetime) -> dt.datetime | None:
    """When the job's next attempt after `after` started, from every source that says so."""
    attempt = JobAttempt.objects.filter(job_id=job_id, started_at__gt=after).aggregate(
        first=Min("started_at")
    )["first"]
    phase = JobPhase.objects.filter(
        job_id=job_id, name__in=RESTART_PHASES, start__gt=after
    ).aggregate(first=Min("start"))["first"]
    return _earliest(attempt, phase, _new_ranks(job_id, after), _stepped_back(job_id, after))


def _first_step(job_id: int, since: dt.datetime) -> dt.datetime | None:
    """The first step sample (job-wide or per node) at or after `since`."""
    return _earliest(
        *(
            model.objects.filter(job_id=job_id, ts__gte=since).aggregate(at=Min("ts"))["at"]
            for model in (JobMetric, NodeStepMetric)
        )
    )


def road_back(incident: Incident) -> RoadBack:
    """The road back KUAE can read for this incident now (a dozen queries)."""
    failed = incident.failed_at
    mitigated = mitigated_at(incident)
    job_id = incident.job_id
    if job_id is None:
        return RoadBack(mitigated_at=mitigated)
    restarted = restarted_at(job_id, failed)
    if restarted is None:
        return RoadBack(mitigated_at=mitigated)
    restored: dt.datetime | None = (
        JobPhase.objects.filter(job_id=job_id, name=RESTORE_PHASE, start__gt=failed)
        .order_by("start")
        .values_list("end", flat=True)
        .first()
    )
    went_on = progress_after(job_id, failed)
    caught_up = went_on.at if went_on is not None and went_on.at >= restarted else None
    resumed = restored or _first_step(job_id, restarted)
    return RoadBack(
        mitigated_at=mitigated,
        restarted_at=restarted,
        restored_at=restored,
        caught_up_at=caught_up,
        resumed_at=resumed,
    )


def _changes(incident: Incident, road: RoadBack) -> dict[str, object]:
    """The times to write: what KUAE found that differs from what is stored, except the
    times a person set."""
    from apps.incidents.services import BY_PERSON  # services import this module

    theirs = set((incident.details or {}).get(BY_PERSON) or [])
    found: dict[str, dt.datetime | None] = {
        "mitigated_at": road.mitigated_at,
        "restarted_at": road.restarted_at,
        "restored_at": road.restored_at,
        "caught_up_at": road.caught_up_at,
    }
    if road.resumed_at is not None:
        floor = max(t for t in (incident.detected_at, incident.localized_at) if t is not None)
        resumed = max(road.resumed_at, floor)
        if incident.resolved_at is None or resumed <= incident.resolved_at:
            found["recovered_at"] = resumed
    return {
        field: at
        for field, at in found.items()
        if at is not None and field not in theirs and getattr(incident, field) != at
    }


def road_fill(incident: Incident) -> bool:
    """Write the road back KUAE reads for one unexpected interruption (one timeline line
    naming what changed); True when something changed. Times that would break the order
    of the incident's times (a person's time in the way) are left out, and said in the log."""
    from apps.incidents.services import incident_update  # services import this module

    changes = _changes(incident, road_back(incident))
    if not changes:
        return False
    try:
        incident_update(incident=incident, changes=changes, actor=ACTOR)
    except ValidationError as exc:
        log.info("incident %s: road back %s not written: %s", incident.pk, changes, exc)
        incident.refresh_from_db()
        return False
    return True


def road_candidates(job_ids: Iterable[int], *, now: dt.datetime | None = None) -> list[Incident]:
    """The jobs' unexpected interruptions whose road back is not yet complete (not caught
    up), failed within `LOOK_FOR`, and not outlived by a job that kept running: one query."""
    since = (now or timezone.now()) - LOOK_FOR
    return list(
        Incident.objects.filter(
            job_id__in=list(job_ids),
            interrupts_job=True,
            planned=False,
            caught_up_at__isnull=True,
        )
        .filter(Q(occurred_at__gte=since) | Q(occurred_at__isnull=True, detected_at__gte=since))
        .exclude(details__has_key="kept_running")
        .order_by("pk")
    )


def road_check(job_id: int) -> int:
    """Fill the road back of the job's unexpected interruptions from what was recorded;
    returns how many changed. One query when there is none to fill."""
    return road_check_many([job_id])


def road_check_many(job_ids: Iterable[int]) -> int:
    """`road_check` for several jobs (a Slurm intake's changed attempts): one query when
    none of them has an interruption to follow."""
    return sum(road_fill(incident) for incident in road_candidates(job_ids))


def mitigation_follow(*, node: Node, change: NodeStateChange, before: str, after: str) -> int:
    """A node state change (a follower of apps/fleet/transitions.py, in its transaction):
    a change to an out-of-service state mitigates the node's unexpected interruptions that
    failed at or before it and have no `mitigated_at` yet. Returns how many."""
    from apps.incidents.services import BY_PERSON, incident_update

    if after not in OUT_STATES:
        return 0
    done = 0
    for incident in (
        Incident.objects.filter(
            nodes=node,
            interrupts_job=True,
            planned=False,
            mitigated_at__isnull=True,
        )
        .filter(
            Q(occurred_at__lte=change.at) | Q(occurred_at__isnull=True, detected_at__lte=change.at)
        )
        .filter(Q(occurred_at__gte=change.at - LOOK_FOR) | Q(detected_at__gte=change.at - LOOK_FOR))
        .exclude(details__has_key="kept_running")
    ):
        if "mitigated_at" in ((incident.details or {}).get(BY_PERSON) or []):
            continue
        try:  # never roll the state change back for an incident's time
            incident_update(incident=incident, changes={"mitigated_at": change.at}, actor=ACTOR)
        except ValidationError as exc:
            log.info("incident %s: mitigated_at not written: %s", incident.pk, exc)
            continue
        done += 1
    return done


def job_recorded(job_id: int) -> int:
    """The job's progress, ranks, phases or Slurm attempts were recorded: recover the
    interruptions it kept running through (apps/incidents/progress.py), then fill the road
    back of those it restarted from. Returns how many incidents changed."""
    from apps.incidents.progress import progress_check  # progress reads restarted_at here

    return progress_check(job_id) + road_check(job_id)
