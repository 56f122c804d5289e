"""docs/incidents.md, The road back: an unexpected interruption's mitigated, restarted,
restored and caught-up times are read from what KUAE sees — the node's drain, the job's new
attempt (Slurm, ranks, phases, a step that went back), the Reporter's restore, the first step
past the one reached at the failure — and `recovered_at` becomes the moment training resumed,
unless a person set it."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.services.nodes import node_set_state
from apps.incidents.models import Incident
from apps.incidents.services import incident_open
from apps.jobs.intake import MetricSample
from apps.jobs.models import Job, JobAttempt
from apps.jobs.phase_intake import PhaseItem
from apps.jobs.rank_intake import RankItem
from apps.jobs.ranks import ranks_register
from apps.jobs.readers import job_progressed
from apps.jobs.services import job_metrics_ingest, job_phases_record

pytestmark = pytest.mark.django_db

S = dt.timedelta(seconds=1)
M = dt.timedelta(minutes=1)


def steps(job: Job, first: dt.datetime, numbers: range, every: dt.timedelta = 10 * S) -> None:
    job_metrics_ingest(
        job=job,
        samples=[
            MetricSample(
                ts=first + i * every,
                step=n,
                step_time_s=10.0,
                tokens_per_s=2.0e5,
                loss=2.1,
                grad_norm=1.0,
                node=None,
                compute_s=None,
            )
            for i, n in enumerate(numbers)
        ],
    )


def ranks(job: Job, started: dt.datetime, *, pid: int, now: dt.datetime) -> int:
    items = [
        RankItem(
            rank=r,
            world_size=4,
            node=f"gpu00{r}",
            local_rank=0,
            pid=pid + r,
            started_at=started,
        )
        for r in range(4)
    ]
    return ranks_register(job=job, items=items, now=now)[1]


def failure(cluster, job: Job, nodes, failed: dt.datetime, **times) -> Incident:  # noqa: ANN001
    return incident_open(
        cluster=cluster,
        title="GPU fell off the bus on gpu001",
        category="gpu",
        severity="sev2",
        occurred_at=failed,
        detected_at=failed + 40 * S,
        localized_at=failed + 2 * M,
        job=job,
        nodes=[nodes[1]],
        interrupts_job=True,
        planned=False,
        source="health",
        **times,
    )


def test_the_road_back_is_read_from_drain_ranks_phases_and_steps(cluster, nodes, job):
    now = timezone.now()
    failed = now - 60 * M
    ranks(job, failed - 5 * 60 * M, pid=100, now=failed - 5 * 60 * M)
    steps(job, failed - 100 * S, range(91, 101))  # step 100 reached just before the failure
    incident = failure(cluster, job, nodes, failed)
    assert incident.mitigated_at is incident.restarted_at is incident.recovered_at is None

    drained = failed + 3 * M
    node_set_state(node=nodes[1], state="drained", reason="gpu fell off", at=drained)
    incident.refresh_from_db()
    assert incident.mitigated_at == drained  # the drain it caused, as it happened

    restart = failed + 9 * M
    assert ranks(job, restart, pid=900, now=restart + 20 * S) == 2  # a new attempt
    incident.refresh_from_db()
    assert incident.restarted_at == restart  # the new attempt's processes started then
    restored = restart + 95 * S
    job_phases_record(
        job=job,
        phases=[
            PhaseItem("startup", restart, restored, None, None),
            PhaseItem("checkpoint_restore", restored - 70 * S, restored, None, 80),
        ],
    )
    incident.refresh_from_db()
    assert incident.restored_at == restored
    assert incident.recovered_at == restored  # training resumed where the restore ended
    assert incident.caught_up_at is None

    first = restored + 10 * S
    steps(job, first, range(81, 104))  # from the checkpoint at 80 back past 100
    incident.refresh_from_db()
    assert incident.caught_up_at == first + 20 * 10 * S  # step 101, the first past 100
    assert incident.recovered_at == restored  # unchanged by later steps
    assert incident.details.get("kept_running") is None  # it restarted: not "kept running"
    job.refresh_from_db()  # while it redid 81…100 it stepped: its progress time moved on
    assert job.progress_step == 103 and job.progress_at == first + 22 * 10 * S
    said = [t.text for t in incident.timeline.filter(actor="kuae")]
    assert any("restarted_at" in t for t in said) and any("caught_up_at" in t for t in said)
    # The downtime ends at the restore: 9 minutes to restart and 95 s of start-up and restore.
    assert incident.downtime_s == pytest.approx((restored - failed).total_seconds())


def test_without_a_restore_training_resumed_at_the_new_attempts_first_step(cluster, nodes, job):
    now = timezone.now()
    failed = now - 60 * M
    steps(job, failed - 100 * S, range(491, 501))
    incident = failure(cluster, job, nodes, failed)
    back = failed + 12 * M
    steps(job, back, range(451, 461))  # a step that went back: the job restarted from 450
    incident.refresh_from_db()
    assert incident.restarted_at == back and incident.recovered_at == back
    assert incident.restored_at is None and incident.caught_up_at is None
    assert incident.mitigated_at is None  # its node was never taken out
    job.refresh_from_db()  # the replay below step 500 is progress for job_hang, not a hang
    assert job.progress_step == 500 and job.progress_at == back + 9 * 10 * S
    steps(job, back, range(451, 461))  # the same batch again: no step is progress twice
    job.refresh_from_db()
    assert job.progress_at == back + 9 * 10 * S


def test_a_slurm_attempt_that_started_after_the_failure_is_the_restart(cluster, nodes, job):
    now = timezone.now()
    failed = now - 60 * M
    steps(job, failed - 100 * S, range(1, 11))
    incident = failure(cluster, job, nodes, failed)
    JobAttempt.objects.create(job=job, key=1, state="NODE_FAIL", started_at=failed - 60 * M)
    JobAttempt.objects.create(job=job, key=2, state="RUNNING", started_at=failed + 7 * M)
    job_progressed(job.pk)
    incident.refresh_from_db()
    assert incident.restarted_at == failed + 7 * M
    assert incident.recovered_at is None  # no step nor restore yet: training not resumed


def test_times_a_person_set_are_never_overwritten(api, cluster, nodes, job):
    now = timezone.now()
    failed = now - 60 * M
    steps(job, failed - 100 * S, range(1, 11))
    incident = failure(cluster, job, nodes, failed)
    mine = failed + 20 * M
    r = api("erin").patch(
        f"/api/v1/incidents/{incident.pk}/",
        {"recovered_at": mine.isoformat(), "mitigated_at": (failed + 4 * M).isoformat()},
        format="json",
    )
    assert r.status_code == 200, r.content
    assert set(r.json()["details"]["times_by_person"]) == {"mitigated_at", "recovered_at"}
    node_set_state(node=nodes[1], state="drained", reason="x", at=failed + 5 * M)
    steps(job, failed + 11 * M, range(5, 9))  # restarted from 4
    incident.refresh_from_db()
    assert incident.restarted_at == failed + 11 * M  # KUAE's own
    assert incident.recovered_at == mine and incident.mitigated_at == failed + 4 * M


def test_road_times_are_checked_like_the_others(api, cluster, nodes, job):
    failed = timezone.now() - 60 * M
    incident = failure(cluster, job, nodes, failed)
    r = api("erin").patch(
        f"/api/v1/incidents/{incident.pk}/",
        {"restarted_at": (failed - M).isoformat()},
        format="json",
    )
    assert r.status_code == 400 and "restarted_at" in r.json()
    r = api("erin").patch(
        f"/api/v1/incidents/{incident.pk}/",
        {
            "restarted_at": (failed + 9 * M).isoformat(),
            "restored_at": (failed + 8 * M).isoformat(),
        },
        format="json",
    )
    assert r.status_code == 400 and "restored_at" in r.json()
    r = api("otto").patch(  # operators set times, these too
        f"/api/v1/incidents/{incident.pk}/",
        {"caught_up_at": (failed + 30 * M).isoformat()},
        format="json",
    )
    assert r.status_code == 200 and r.json()["caught_up_at"]


def test_a_planned_interruption_has_no_road_back_filled(cluster, nodes, job):
    failed = timezone.now() - 60 * M
    steps(job, failed - 100 * S, range(1, 11))
    incident = incident_open(
        cluster=cluster,
        title="maintenance",
        category="host_maintenance",
        severity="sev4",
        detected_at=failed,
        job=job,
        nodes=[nodes[1]],
        interrupts_job=True,
        planned=True,
    )
    node_set_state(node=nodes[1], state="maintenance", reason="x", at=failed + M)
    steps(job, failed + 11 * M, range(5, 9))
    incident.refresh_from_db()
    assert incident.mitigated_at is None and incident.restarted_at is None
