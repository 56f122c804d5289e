"""A cluster with a Celery queue of its own (`Cluster.queue`): its checks and Slurm syncs are
sent there, so a big cluster's backlog never holds up another's checks — proven with real
workers over the configured broker — and the overview says when nobody takes a queue. Old
runs are pruned (the overview's reads of them go through indexes)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from apps.fleet.models import Cluster
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.health.checks import SCHEDULED_KINDS
from apps.health.choices import RunStatus
from apps.health.models import CheckRun
from apps.health.selectors import checks_waiting
from apps.health.services import runs_request
from apps.health.tasks import health_tick
from tests.test_celery_worker import wait_for, worker

URL = "/api/v1/clusters/c1/"


def test_admin_sets_the_queue_through_the_api(
    api: Callable[[str | None], Any], cluster: Cluster
) -> None:
    assert api("mia").get(URL).json()["queue"] == ""
    assert api("otto").patch(URL, {"queue": "big"}, format="json").status_code == 403
    answer = api("root").patch(URL, {"queue": "checks.big-1"}, format="json")
    assert answer.status_code == 200, answer.content
    cluster.refresh_from_db()
    assert cluster.queue == "checks.big-1"
    assert cluster.task_options() == {"queue": "checks.big-1"}


@pytest.mark.parametrize("bad", ["has space", "-lead", "x" * 65, "semi;colon"])
def test_a_bad_queue_name_is_a_400_naming_the_field(
    api: Callable[[str | None], Any], cluster: Cluster, bad: str
) -> None:
    answer = api("root").patch(URL, {"queue": bad}, format="json")
    assert answer.status_code == 400
    assert "queue" in answer.json()


def test_runs_are_sent_to_the_clusters_queue_or_the_default(
    cluster: Cluster, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as sends:
        runs_request(cluster=cluster, kinds=["heartbeat"], requested_by="t")
    assert [s.keywords for s in sends] == [{}]  # the task's route / the shared default queue
    cluster.queue = "checks.c1"
    cluster.save()
    with django_capture_on_commit_callbacks(execute=False) as sends:
        runs_request(cluster=cluster, kinds=["thermal", "sdc"], requested_by="t")  # new kinds
    assert [s.keywords for s in sends] == [{"queue": "checks.c1"}] * 2


@pytest.mark.embedded
@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_a_big_clusters_queue_never_holds_up_another_clusters_checks():
    from kuaeweb.celery import app

    tag = uuid.uuid4().hex[:8]
    shared, own = f"test-{tag}", f"test-big-{tag}"
    small = cluster_create(
        name="small", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    big = cluster_create(name="big", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8)
    Cluster.objects.filter(pk=big.pk).update(queue=own)
    for c in (small, big):
        nodes_register(cluster=c, specs=[NodeSpec(hostname=f"{c.name}{i}") for i in range(4)])
    kinds = len(SCHEDULED_KINDS)

    def done(c: Cluster) -> int:
        return CheckRun.objects.filter(cluster=c, status=RunStatus.DONE).count()

    default = app.conf.task_default_queue
    app.conf.task_default_queue = shared
    try:
        # Only the shared queue has a worker: the small cluster's checks all run while the
        # big cluster's wait on their own queue, untouched.
        with worker(shared) as output:
            health_tick.apply_async(queue=shared)  # what beat sends every 10 s
            landed = wait_for(lambda: done(small) == kinds)
        assert landed, output
        assert CheckRun.objects.filter(cluster=big).count() == kinds
        assert done(big) == 0
        assert CheckRun.objects.filter(cluster=big, status=RunStatus.QUEUED).count() == kinds
        later = timezone.now() + dt.timedelta(minutes=5)
        waiting = checks_waiting(cluster=Cluster.objects.get(pk=big.pk), now=later)
        assert waiting is not None and waiting.queue == own and waiting.runs == kinds
        # A worker on the big cluster's queue takes its runs.
        with worker(own) as output:
            landed = wait_for(lambda: done(big) == kinds)
        assert landed, output
        assert checks_waiting(cluster=Cluster.objects.get(pk=big.pk), now=later) is None
    finally:
        app.conf.task_default_queue = default


def test_the_overview_says_when_nobody_takes_a_clusters_checks(
    cluster: Cluster, client: Client, users: dict[str, Any]
) -> None:
    client.force_login(users["otto"])
    cluster.queue = "checks.c1"
    cluster.save()
    run = CheckRun.objects.create(cluster=cluster, kind="heartbeat")
    assert "data-checks-waiting" not in client.get("/").content.decode()  # just queued
    CheckRun.objects.filter(pk=run.pk).update(queued_at=timezone.now() - dt.timedelta(minutes=3))
    page = client.get("/").content.decode()
    assert "data-checks-waiting" in page and "-Q checks.c1" in page
    # a run that started recently means a worker takes the queue: no banner
    CheckRun.objects.create(cluster=cluster, kind="thermal", started_at=timezone.now())
    assert "data-checks-waiting" not in client.get("/").content.decode()


def test_slurm_syncs_go_to_the_clusters_queue(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.scheduler import tasks

    other = cluster_create(name="c2", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8)
    Cluster.objects.filter(pk=cluster.pk).update(slurm_kind="cli", queue="sync.c1")
    Cluster.objects.filter(pk=other.pk).update(slurm_kind="cli")
    sent: dict[int, dict[str, Any]] = {}
    monkeypatch.setattr(
        tasks.sync_cluster,
        "apply_async",
        lambda args, **options: sent.setdefault(args[0], options),
    )
    assert tasks.sync_round() == 2
    assert sent[cluster.pk]["queue"] == "sync.c1"
    assert "queue" not in sent[other.pk]


def test_old_runs_are_pruned_and_their_results_stay(cluster: Cluster) -> None:
    from apps.health.models import CheckResult
    from apps.health.services import runs_prune

    now = timezone.now()
    old = CheckRun.objects.create(cluster=cluster, kind="heartbeat", status=RunStatus.DONE)
    new = CheckRun.objects.create(cluster=cluster, kind="heartbeat", status=RunStatus.DONE)
    CheckRun.objects.filter(pk=old.pk).update(queued_at=now - dt.timedelta(days=31))
    result = CheckResult.objects.create(
        cluster=cluster,
        kind="heartbeat",
        target="node:x",
        status="fail",
        at=now,
        since=now,
        run=old,
    )
    assert runs_prune(older_than_days=30, now=now) == 1
    assert list(CheckRun.objects.values_list("pk", flat=True)) == [new.pk]
    result.refresh_from_db()
    assert result.run_id is None and result.status == "fail"
