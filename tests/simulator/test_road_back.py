"""The simulator's road back from each unexpected interruption of a job
(docs/simulator.md, The road back): ordered times, the next attempt's phases, a step series
that goes back to the restored checkpoint and climbs past the failure's step, the same for
a seed."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import call_command

from apps.fleet.models import Node, NodeStateChange
from apps.incidents.models import Incident
from apps.jobs.models import Checkpoint, Job, JobMetric, JobPhase
from apps.simulator.plan import Interruption, JobPlan, make_plan
from apps.simulator.series import job_series

END = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
ROAD = (
    "occurred_at",
    "detected_at",
    "localized_at",
    "mitigated_at",
    "restarted_at",
    "restored_at",
    "caught_up_at",
)


def run(**opts) -> None:
    call_command("simulate", stdout=io.StringIO(), stderr=io.StringIO(), **opts)


def test_the_plan_draws_an_ordered_road_of_minutes():
    plan = make_plan(gpus=4096, days=10, seed=5, end=END)
    again = make_plan(gpus=4096, days=10, seed=5, end=END)
    roads = [i for i in plan.interruptions if i.job is not None and not i.planned]
    assert len(roads) > 10
    for i in roads:
        chain = [i.at, i.detected_at, i.localized_at, i.mitigated_at, i.restarted_at]
        chain += [i.loading_at, i.restored_at]
        assert None not in chain and chain == sorted(chain), i
        assert i.recovered_at == i.restored_at
        assert i.mitigated_at - i.localized_at <= dt.timedelta(minutes=2)
        # the next attempt minutes after the drain; restored tens of seconds to minutes later
        assert (
            dt.timedelta(minutes=1) <= i.restarted_at - i.mitigated_at <= dt.timedelta(minutes=15)
        )
        assert (
            dt.timedelta(seconds=50) <= i.restored_at - i.restarted_at <= dt.timedelta(minutes=10)
        )
        if i.category not in ("silent_data_corruption",):
            assert i.recovered_at - i.at < dt.timedelta(hours=1.5), i.category
    # silent failures are found later than the rest
    late = [i.detected_at - i.at for i in roads if i.category in ("hang", "nccl_timeout")]
    loud = [i.detected_at - i.at for i in roads if i.category.startswith("gpu")]
    if late and loud:
        assert min(late) > max(loud)
    key = lambda p: [  # noqa: E731
        (i.at, i.mitigated_at, i.restarted_at, i.restored_at) for i in p.interruptions
    ]
    assert key(plan) == key(again)
    assert key(plan) != key(make_plan(gpus=4096, days=10, seed=6, end=END))


def test_the_series_goes_back_at_restart_and_catches_up():
    plan = make_plan(gpus=1024, days=14, seed=1, end=END)
    flagship = plan.jobs[0]
    series = job_series(flagship, until=plan.end, interval_s=60, seed=1)
    assert len(series.restarts) >= 3
    for restart in series.restarts:
        item = restart.item
        assert restart.step is not None  # a 30-minute checkpoint had finished by then
        saved = [c for c in series.checkpoints if c.step == restart.step]
        ckpt = saved[-1]
        assert ckpt.saved_at + dt.timedelta(seconds=ckpt.blocking_s) <= item.at
        before = [s for s in series.samples if s.ts <= item.at]
        after = [s for s in series.samples if s.ts > item.at]
        assert restart.reached == max(s.step for s in before)
        # nothing between the failure and the restore, then back at the checkpoint's step
        assert after[0].ts >= item.restored_at
        assert ckpt.step <= after[0].step < restart.reached
        assert restart.caught_up_at == next(s.ts for s in after if s.step > restart.reached)
        # catching up takes about the rework: the failure less the checkpoint's save
        rework = item.at - ckpt.saved_at
        took = restart.caught_up_at - item.restored_at
        assert abs(took - rework) < dt.timedelta(minutes=10) + 0.1 * rework
        named = {
            (p.name, p.start, p.end, p.step)
            for p in series.phases
            if item.restarted_at <= p.start < item.restored_at
        }
        assert named == {
            ("startup", item.restarted_at, item.loading_at, None),
            ("checkpoint_restore", item.loading_at, item.restored_at, restart.step),
        }


def test_the_series_pauses_for_evaluations_and_data():
    plan = make_plan(gpus=1024, days=14, seed=1, end=END)
    series = job_series(plan.jobs[0], until=plan.end, interval_s=60, seed=1)
    evals = [p for p in series.phases if p.name == "eval"]
    waits = [p for p in series.phases if p.name == "data_wait"]
    assert 14 * 24 / 4 <= len(evals) <= 14 * 24 / 2 + 1  # one every 2–4 hours
    assert 5 <= len(waits) <= 80
    for p in evals + waits:
        assert dt.timedelta(0) < p.end - p.start <= dt.timedelta(minutes=8)
        assert not [s for s in series.samples if p.start < s.ts < p.end]  # training paused
        assert p.end <= plan.end - dt.timedelta(minutes=15)
    first = series.phases[0]
    assert first.name == "startup" and first.start == plan.jobs[0].start
    assert series.samples[0].ts == first.end


@pytest.mark.django_db
def test_simulate_writes_the_road_back_its_phases_and_states():
    run(gpus=256, days=4, seed=2, failure_rate=0.1)  # about 12 interruptions
    roads = Incident.objects.filter(planned=False, interrupts_job=True).exclude(restored_at=None)
    assert roads.count() >= 3
    for incident in roads:
        times = [getattr(incident, f) for f in ROAD if getattr(incident, f) is not None]
        assert times == sorted(times), incident
        assert incident.recovered_at == incident.restored_at
        assert None not in (incident.localized_at, incident.mitigated_at, incident.restarted_at)
        job = incident.job
        restore = JobPhase.objects.get(job=job, name="checkpoint_restore", end=incident.restored_at)
        assert JobPhase.objects.filter(
            job=job, name="startup", start=incident.restarted_at, end=restore.start
        ).exists()
        ckpt = Checkpoint.objects.filter(job=job, step=restore.step).latest("saved_at")
        assert ckpt.saved_at <= incident.occurred_at
        # the step series goes back to the checkpoint at the restart, then climbs past f
        reached = max(
            JobMetric.objects.filter(job=job, ts__lte=incident.occurred_at).values_list(
                "step", flat=True
            )
        )
        resumed = JobMetric.objects.filter(job=job, ts__gt=incident.occurred_at).order_by("ts")
        assert resumed[0].ts >= incident.restored_at and resumed[0].step < reached
        if incident.caught_up_at is not None:
            first = resumed.filter(step__gt=reached).first()
            assert first is not None and first.ts == incident.caught_up_at
        # the blamed node's history shows the drain at the mitigation
        node = incident.nodes.get()
        assert NodeStateChange.objects.filter(
            node=node, at=incident.mitigated_at, state__in=("drained", "down")
        ).exists()
    for job in Job.objects.all():
        assert (
            job.restart_count
            == job.incidents.filter(planned=False, restarted_at__isnull=False).count()
        )
    names = set(JobPhase.objects.values_list("name", flat=True))
    assert {"startup", "checkpoint_restore", "eval", "data_wait"} <= names


@pytest.mark.django_db
def test_the_same_seed_writes_the_same_road_and_phases():
    def written() -> tuple[list[tuple], list[tuple]]:
        """The road's times and the phases, as offsets from the history's start (each run
        ends at its own now)."""
        start = Node.objects.earliest("in_service_at").in_service_at

        def off(at: dt.datetime | None) -> dt.timedelta | None:
            return None if at is None else at - start

        roads = sorted(
            tuple(off(getattr(i, f)) for f in ROAD)
            for i in Incident.objects.filter(planned=False, interrupts_job=True)
        )
        phases = sorted(
            (job, name, off(begun), off(end), step)
            for job, name, begun, end, step in JobPhase.objects.values_list(
                "job__name", "name", "start", "end", "step"
            )
        )
        return roads, phases

    run(gpus=128, days=3, seed=4, failure_rate=0.05)
    first = written()
    run(gpus=128, days=3, seed=4, failure_rate=0.05)
    assert written() == first and first[0] and first[1]


def test_a_restart_before_any_checkpoint_starts_over_with_nothing_to_restore():
    start = END - dt.timedelta(hours=6)
    at = start + dt.timedelta(minutes=20)  # before the first 30-minute checkpoint
    mins = lambda m: at + dt.timedelta(minutes=m)  # noqa: E731
    item = Interruption(
        at=at,
        category="gpu",
        node=0,
        job=1,
        detected_at=mins(1),
        localized_at=mins(3),
        mitigated_at=mins(4),
        restarted_at=mins(8),
        loading_at=mins(10),
        restored_at=mins(11),
        recovered_at=mins(11),
    )
    job = JobPlan(
        index=1,
        name="small",
        model="llama-7b",
        n_params=6.7e9,
        batch_tokens=4_194_304,
        nodes=[0, 1],
        start=start,
        end=None,
        status="running",
        mfu=0.4,
        checkpoint_every_s=1800,
        checkpoint_blocking_s=(5, 10),
        interruptions=[item],
    )
    series = job_series(job, until=END, interval_s=60, seed=3)
    (restart,) = series.restarts
    assert restart.step is None and restart.reached > 0
    after = [s for s in series.samples if s.ts > at]
    assert after[0].ts == item.restored_at and after[0].step < 100
    assert restart.caught_up_at is not None and restart.caught_up_at > item.restored_at
    spans = [(p.name, p.start, p.end) for p in series.phases if p.start >= at]
    assert ("startup", item.restarted_at, item.restored_at) in spans
    assert not [p for p in series.phases if p.name == "checkpoint_restore"]
