"""`job_hang` reads every running job of a cluster in a fixed number of queries (issue 46):
three times the healthy jobs, nodes and ranks cost no query more, and the findings are
those the one-job readings (the job page's `job_step_times`, `job_verdict`) give."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.fleet.models import Cluster
from apps.fleet.services import NodeSpec, nodes_register
from apps.health.checks.base import Context
from apps.health.detectors import Finding, JobProgress, job_hang
from apps.health.detectors.job_hang import judged
from apps.health.models import Thresholds
from apps.health.services import detect, limits_for
from apps.health.suspects import job_suspects
from apps.jobs.models import Job, JobMetric, NodeStepMetric, Rank, RankStack
from apps.jobs.selectors import job_step_times, job_verdict
from apps.jobs.services import job_create

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=0) + dt.timedelta(microseconds=123_457)
WAIT = RankStack(digest="w" * 64, frames=[], frame="main (/train.py:50)", collective="all_reduce")
LOAD = RankStack(digest="l" * 64, frames=[], frame="load_batch (/train.py:20)", collective="")


def _job(
    cluster: Cluster, name: str, *, progress_s: float | None, started_s: float = 3 * 3600
) -> Job:
    """A running job on two nodes of its own, started `started_s` ago; its progress
    `progress_s` ago (None: none)."""
    nodes = nodes_register(
        cluster=cluster, specs=[NodeSpec(hostname=f"{name}-{i}", rack="r0") for i in range(2)]
    )
    job, _ = job_create(
        cluster=cluster,
        nodes=nodes,
        name=name,
        gpu_count=16,
        status="running",
        started_at=NOW - dt.timedelta(seconds=started_s),
    )
    if progress_s is not None:
        job.progress_at = NOW - dt.timedelta(seconds=progress_s)
        job.progress_step = 1000
        job.save(update_fields=["progress_at", "progress_step"])
    return job


def _samples(job: Job, n: int, *, newest_s: float, step_s: float = 2.0) -> None:
    """`n` job-wide samples, one every 10 s up to `newest_s` ago (one not finite)."""
    JobMetric.objects.bulk_create(
        JobMetric(
            job=job,
            ts=NOW - dt.timedelta(seconds=newest_s + 10 * k),
            step=1000 - k,
            step_time_s=math.inf if k == 3 else step_s + k / 100,
            tokens_per_s=1e5,
        )
        for k in range(n)
    )


def _per_node(job: Job, n: int, *, newest_s: float) -> None:
    """`n` per-node samples on each of the job's nodes, one every 10 s up to `newest_s` ago,
    and older ones outside the window a stall reads."""
    rows = []
    for node in job.nodes.all():
        for k in range(n):
            ts = NOW - dt.timedelta(seconds=newest_s + 10 * k)
            rows.append(
                NodeStepMetric(job=job, node=node, ts=ts, step=900 - k, step_time_s=1.0 + k / 7)
            )
        old = NOW - dt.timedelta(hours=2)
        rows.append(NodeStepMetric(job=job, node=node, ts=old, step=1, step_time_s=99.0))
    NodeStepMetric.objects.bulk_create(rows)


def _ranks(job: Job, *, attempt: int, stalled: dict[int, RankStack] | None = None) -> None:
    """Eight ranks of `attempt` on the job's nodes, and an older attempt's; `stalled`: the
    ranks reporting a stall (in the stack given), the others silent."""
    nodes = list(job.nodes.order_by("hostname"))
    rows = []
    for a in (attempt - 1, attempt):
        for r in range(8):
            stack = (stalled or {}).get(r) if a == attempt else None
            at = NOW - dt.timedelta(seconds=70) if stack is not None else None
            rows.append(
                Rank(
                    job=job,
                    attempt=a,
                    rank=r,
                    world_size=8,
                    node=nodes[r // 4],
                    registered_at=NOW - dt.timedelta(hours=1),
                    report_at=at,
                    first_report_at=at,
                    stalled_since=at and at - dt.timedelta(seconds=61),
                    last_step=1000 if stack is not None else None,
                    stalled_s=61.0 if stack is not None else None,
                    in_collective=bool(stack.collective) if stack is not None else None,
                    stack=stack,
                )
            )
    Rank.objects.bulk_create(rows)


def _healthy(cluster: Cluster, k: int) -> None:
    """Four healthy running jobs: job-wide samples with ranks (none stalled), job-wide
    samples alone, per-node samples alone, and one started that has shown no step yet."""
    ranked = _job(cluster, f"ok-ranked-{k}", progress_s=20)
    _samples(ranked, 70, newest_s=20)
    _ranks(ranked, attempt=2)
    _samples(_job(cluster, f"ok-plain-{k}", progress_s=30), 12, newest_s=30)
    _per_node(_job(cluster, f"ok-nodes-{k}", progress_s=15), 60, newest_s=15)
    _job(cluster, f"ok-new-{k}", progress_s=None, started_s=600)


@pytest.fixture
def wrong(cluster: Cluster) -> None:
    """What is wrong, the same at every size: a hung job whose stalled ranks name one
    culprit, a hung job whose ranks all wait alike, a hung job reporting per node only,
    and a progressing job with a rank that reports a stall."""
    WAIT.save()
    LOAD.save()
    culprit = _job(cluster, "hung-culprit", progress_s=3600)
    _samples(culprit, 80, newest_s=3600)
    _ranks(culprit, attempt=3, stalled={r: (LOAD if r == 5 else WAIT) for r in range(8)})
    alike = _job(cluster, "hung-alike", progress_s=3000)
    _samples(alike, 5, newest_s=3000, step_s=30.0)
    _ranks(alike, attempt=1, stalled=dict.fromkeys(range(8), WAIT))
    _per_node(_job(cluster, "hung-nodes", progress_s=2500), 10, newest_s=2500)
    pausing = _job(cluster, "pausing", progress_s=100)
    _samples(pausing, 30, newest_s=100, step_s=20.0)
    _ranks(pausing, attempt=1, stalled={r: WAIT for r in range(4)})


def _one_by_one(ctx: Context) -> list[Finding]:
    """The check as it was: each job's step times and verdict read with its own queries."""
    window = ctx.limits.hang_window
    progress = [
        JobProgress(j.pk, j.name, j.started_at, j.progress_at, j.progress_step, times)
        for j in ctx.jobs
        for times in [job_step_times(j, window)]
    ]
    out = []
    for f in job_hang(progress, now=ctx.now, limits=ctx.limits):
        job = next(j for j in ctx.jobs if j.pk == f.job)
        verdict = job_verdict(job, ctx.now) if job.ranks.exists() else None
        hung = verdict is not None and (verdict.due or f.status != "pass")
        evidence = (
            [s.hostname for s in job_suspects(job=job, now=ctx.now)]
            if verdict is not None and hung and not verdict.minority
            else []
        )
        out.append(judged(f, verdict, now=ctx.now, evidence=evidence))
    return out


def _run(cluster: Cluster) -> tuple[list[Finding], int]:
    limits = limits_for(cluster)
    with CaptureQueriesContext(connection) as queries:
        findings, ctx = detect("job_hang", cluster, NOW, limits)
    assert sorted(findings, key=lambda f: f.target) == sorted(
        _one_by_one(ctx), key=lambda f: f.target
    )
    return findings, len(queries.captured_queries)


def test_three_times_the_jobs_cost_no_query_more_and_judge_alike(cluster, wrong):
    _healthy(cluster, 0)
    small, n = _run(cluster)
    for k in (1, 2):
        _healthy(cluster, k)
    large, n3 = _run(cluster)
    assert len(small) == 8 and len(large) == 16
    names = dict(Job.objects.values_list("pk", "name"))
    by_name = {names[f.job]: f for f in large}
    assert by_name["hung-culprit"].status == "fail"
    assert by_name["hung-culprit"].culprits == ("hung-culprit-1",)  # rank 5's node
    assert by_name["hung-alike"].status == "fail" and "no minority" in by_name["hung-alike"].message
    assert by_name["hung-nodes"].status == "fail"
    assert by_name["pausing"].status == "warn"
    assert all(f.status == "pass" for name, f in by_name.items() if name.startswith("ok-"))
    assert n3 == n


def test_a_job_whose_window_holds_a_non_finite_step_time_is_judged_on_the_newest_samples(
    cluster, wrong
):
    """A hang window shorter than the stall window's 50 samples: each reads its own."""
    Thresholds.objects.create(cluster=cluster, values={"hang_window": 5})
    _healthy(cluster, 0)
    findings, _ = _run(cluster)
    culprit = next(f for f in findings if f.job == Job.objects.get(name="hung-culprit").pk)
    # The newest 5 samples, the infinite one left out (of 80, all at about 2 s a step).
    assert culprit.details["median_step_s"] == pytest.approx(2.015, abs=1e-3)
