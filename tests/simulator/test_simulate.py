"""The simulator: deterministic, realistic, refuses real data, keeps the demo alive."""

from __future__ import annotations

import datetime as dt
import io
import random

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from apps.common.weeks import week_start
from apps.fleet.models import Cluster, Node, NodeStateChange
from apps.fleet.services import cluster_create
from apps.incidents.models import Incident
from apps.jobs.models import Checkpoint, Job, JobMetric, NodeStepMetric
from apps.reports.models import AvailabilityDay
from apps.reports.weekly import weekly_report
from apps.simulator.demo import demo_tick
from apps.simulator.mix import LLAMA3_RATE_PER_NODE_DAY
from apps.simulator.plan import make_plan

END = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)


def run(**opts) -> None:
    call_command("simulate", stdout=io.StringIO(), stderr=io.StringIO(), **opts)


def test_plan_is_deterministic_and_seed_sensitive():
    a = make_plan(gpus=2048, days=10, seed=5, end=END)
    b = make_plan(gpus=2048, days=10, seed=5, end=END)
    c = make_plan(gpus=2048, days=10, seed=6, end=END)
    key = lambda p: [(i.at, i.node, i.category) for i in p.interruptions]  # noqa: E731
    assert key(a) == key(b) and key(a) != key(c)
    assert [j.name for j in a.jobs] == [j.name for j in b.jobs]


def test_failure_rate_follows_llama3():
    plan = make_plan(gpus=16384, days=54, seed=1, end=END)
    unexpected = [i for i in plan.interruptions if not i.planned]
    expected = LLAMA3_RATE_PER_NODE_DAY * 2048 * 54  # = 419
    # Some draws fold into an interruption already under way, so a little fewer land.
    assert 0.6 * expected < len(unexpected) <= 1.15 * expected
    gpu_share = sum(i.category.startswith("gpu") for i in unexpected) / len(unexpected)
    assert 0.45 < gpu_share < 0.7  # Llama 3: 58.7% of interruptions were GPU issues


@pytest.mark.django_db
@pytest.mark.embedded
def test_simulate_writes_a_consistent_history():
    run(gpus=256, days=4, seed=2)
    cluster = Cluster.objects.get(name="kuae-sim")
    assert cluster.simulated and Node.objects.filter(cluster=cluster).count() == 32
    running = Job.objects.filter(status="running")
    assert running.exists()
    assert JobMetric.objects.count() > 1000 and Checkpoint.objects.exists()
    assert NodeStepMetric.objects.exists()
    for job in Job.objects.all():
        assert job.gpu_count == job.nodes.count() * 8
    # Every node's current state is the newest entry of its history.
    for node in Node.objects.all():
        newest = NodeStateChange.objects.filter(node=node).order_by("-at", "-id").first()
        assert newest.state == node.state
    for incident in Incident.objects.all():
        assert incident.occurred_at <= incident.detected_at
        if incident.recovered_at:
            assert incident.detected_at <= incident.recovered_at
    # The finished days' availability is summed, as beat keeps it, with the same figures
    # as the history gives (docs/formulas.md, GPU availability).
    now = timezone.now()
    today = now.astimezone(dt.UTC).date()
    summed = set(AvailabilityDay.objects.filter(cluster=cluster).values_list("day", flat=True))
    assert {today - dt.timedelta(days=k) for k in (1, 2, 3)} <= summed and today not in summed
    start = week_start(now - dt.timedelta(days=1))  # a week holding a summed day
    report = weekly_report(cluster=cluster, start=start, now=now)
    AvailabilityDay.objects.all().delete()
    assert weekly_report(cluster=cluster, start=start, now=now) == report


@pytest.mark.django_db
def test_same_seed_same_history_and_rerun_replaces():
    run(gpus=128, days=3, seed=4)
    first = (JobMetric.objects.count(), Incident.objects.count(), Checkpoint.objects.count())
    run(gpus=128, days=3, seed=4)
    assert (
        JobMetric.objects.count(),
        Incident.objects.count(),
        Checkpoint.objects.count(),
    ) == first
    assert Cluster.objects.count() == 1


@pytest.mark.django_db
def test_refuses_a_database_with_real_clusters():
    cluster_create(name="prod", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8)
    with pytest.raises(CommandError, match="did not write"):
        run(gpus=64, days=1)
    run(gpus=64, days=1, force=True)
    assert Cluster.objects.filter(simulated=True).count() == 1


@pytest.mark.django_db
def test_demo_tick_keeps_the_cluster_alive(tmp_path, settings):
    settings.VAR_DIR = tmp_path
    run(gpus=128, days=1, seed=1)
    job = (
        Job.objects.filter(status="running")
        .exclude(last_metric_at=None)
        .order_by("-gpu_count")
        .first()
    )
    before = job.last_metric_at
    now = timezone.now() + dt.timedelta(minutes=3)
    counts = demo_tick(now=now, rng=random.Random(1))
    job.refresh_from_db()
    assert counts["samples"] > 0 and job.last_metric_at > before
    assert Node.objects.filter(last_heartbeat_at=now).count() == counts["nodes"] > 0
    assert counts["gpus"] > 0


@pytest.mark.django_db
def test_simulate_leaves_the_planner_statistics_of_what_it_wrote():
    """On PostgreSQL simulate ends with ANALYZE: without it (autovacuum off, or not round yet)
    the pages of a large simulated fleet are planned for a handful of rows."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("planner statistics are PostgreSQL's")
    out, err = io.StringIO(), io.StringIO()
    call_command("simulate", gpus=32, days=1, seed=5, stdout=out, stderr=err)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, reltuples FROM pg_class WHERE relname IN ('fleet_gpu', 'fleet_node')"
        )
        counted = dict(cursor.fetchall())
    assert counted == {"fleet_gpu": 32, "fleet_node": 4}
    assert "planner statistics gathered (ANALYZE)" in err.getvalue()
