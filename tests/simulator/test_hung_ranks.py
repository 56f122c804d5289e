"""The simulated hang's ranks: the demo's hung job names its culprit as a real one would
(docs/checks.md, Ranks), and keeps doing so while the demo runs."""

from __future__ import annotations

import datetime as dt
import io
import random

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.health.services import run_execute, runs_request
from apps.incidents.models import Incident
from apps.jobs.models import Job, Rank
from apps.jobs.rank_intake import MAX_RANKS, MAX_REPORTS
from apps.jobs.services import job_create
from apps.simulator.demo import demo_tick
from apps.simulator.ranks import REPORT_AFTER, hung_ranks_write

pytestmark = pytest.mark.django_db


def _judge(job: Job, now: dt.datetime) -> Incident | None:
    run = runs_request(cluster=job.cluster, kinds=["job_hang"], requested_by="test")[0]
    run_execute(run_id=run.pk, now=now)
    return Incident.objects.filter(job=job, category="hang").first()


def test_the_simulated_hang_names_its_culprit_while_the_demo_runs(tmp_path, settings):
    settings.VAR_DIR = tmp_path
    call_command("simulate", gpus=128, days=1, seed=1, stdout=io.StringIO())
    hung = Job.objects.get(ranks__isnull=False, status="running", ranks__rank=0)
    ranks = Rank.objects.filter(job=hung)
    assert ranks.count() == hung.gpu_count
    outside = ranks.get(in_collective=False)  # one rank stuck in its data loader
    assert outside.local_rank == 0 and ranks.filter(in_collective=True).count() == ranks.count() - 1
    culprit = outside.node.hostname

    now = timezone.now()
    incident = _judge(hung, now)
    assert incident is not None and incident.severity == "sev1"
    assert [n.hostname for n in incident.nodes.all()] == [culprit]
    assert incident.localized_at is not None
    said = "\n".join(incident.timeline.values_list("text", flat=True))
    assert f"rank {outside.rank} on {culprit}" in said and "load_batch" in said
    assert "all_reduce" in said

    # Ten minutes on, the demo's ticks have re-reported: still the same culprit, not silence.
    later = now + dt.timedelta(minutes=10)
    assert demo_tick(now=later, rng=random.Random(1))["stalls"] == hung.gpu_count
    assert not ranks.filter(report_at__lt=later).exists()
    _judge(hung, later)
    incident.refresh_from_db()
    assert [n.hostname for n in incident.nodes.all()] == [culprit]
    assert "silent" not in (incident.details.get("verdict") or "")


def test_a_hung_job_over_one_batch_registers_and_reports_every_rank():
    """A hung job with more ranks than one batch of `POST jobs/{id}/ranks/` or
    `POST ingest/stalls/` may carry (the largest job of a 102,400-GPU simulation has 76,800)
    is written in batches within those bounds, every rank registered and reporting once."""
    world = MAX_RANKS + 80
    per_node = 16
    cluster = cluster_create(
        name="wide", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=per_node
    )
    hosts = [f"w{i:04d}" for i in range(world // per_node)]
    nodes = nodes_register(cluster=cluster, specs=[NodeSpec(hostname=h) for h in hosts])
    now = timezone.now()
    job, _ = job_create(
        cluster=cluster,
        nodes=nodes,
        name="wide",
        status="running",
        gpu_count=world,
        started_at=now - dt.timedelta(hours=1),
    )
    assert world > MAX_REPORTS
    written = hung_ranks_write(
        job=job,
        hosts=hosts,
        culprit_host=hosts[3],
        gpus_per_node=per_node,
        hang_at=now - REPORT_AFTER,  # one round of reports
        step=100,
        now=now,
    )
    ranks = Rank.objects.filter(job=job)
    assert written == world
    assert ranks.count() == world and not ranks.filter(report_at__isnull=True).exists()
    assert list(ranks.filter(in_collective=False).values_list("rank", flat=True)) == [3 * per_node]
