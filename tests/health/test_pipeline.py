"""Pipeline status (docs/operations.md, Watching the watcher; docs/api.md, Pipeline): real
rows, fresh and stale; the API, /metrics, the red banner, runs no worker took."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.cache import cache
from django.test import override_settings
from django.utils import timezone

from apps.common.heartbeats import heartbeats_record
from apps.health.choices import RunStatus
from apps.health.models import CheckRun, CheckSchedule
from apps.health.pipeline import detection_status, pipeline_status, stale_words
from apps.health.services import NO_WORKER, runs_sweep_unclaimed, schedules_ensure

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_cached_status():
    cache.clear()
    yield
    cache.clear()


def _done(cluster, kind: str, ago_s: float) -> CheckRun:  # noqa: ANN001
    at = timezone.now() - dt.timedelta(seconds=ago_s)
    run = CheckRun.objects.create(cluster=cluster, kind=kind, status=RunStatus.DONE)
    CheckRun.objects.filter(pk=run.pk).update(queued_at=at, started_at=at, duration_s=0.1)
    return run


def _fresh(cluster) -> None:  # noqa: ANN001
    """Every part detection depends on worked a second ago."""
    schedules_ensure()
    heartbeats_record(["beat", "worker:celery@w1"])
    for kind in CheckSchedule.objects.filter(cluster=cluster).values_list("kind", flat=True):
        _done(cluster, kind, 1)


def _parts(status) -> dict[tuple[str, str | None], object]:  # noqa: ANN001
    return {(p.name, p.cluster): p for p in status.parts}


def test_late_checks_are_one_sentence_per_cluster(cluster):
    """A new cluster none of whose checks has run yet is one sentence naming it, not one
    per check; a single late check elsewhere keeps its own words."""
    from apps.fleet.services import cluster_create

    _fresh(cluster)
    empty = cluster_create(
        name="empty", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    schedules_ensure()
    interval = CheckSchedule.objects.get(cluster=cluster, kind="heartbeat").interval_s
    CheckRun.objects.filter(cluster=cluster, kind="heartbeat").delete()
    _done(cluster, "heartbeat", 2 * interval + 240)
    words = stale_words(pipeline_status())
    late = CheckSchedule.objects.filter(cluster=empty, enabled=True).count()
    assert words is not None and late > 1
    assert f"No health check has completed on empty yet ({late} checks are late)" in words
    assert "no heartbeat check has completed on c1 for" in words
    assert words.count("check has completed") == 2, words


def test_fresh_rows_are_ok(cluster):
    _fresh(cluster)
    status = pipeline_status()
    assert status.ok, [p for p in status.parts if not p.ok]
    parts = _parts(status)
    assert parts[("beat", None)].ok and parts[("worker:celery@w1", None)].ok
    heartbeat = parts[("check:heartbeat", "c1")]
    assert (
        heartbeat.age_s < 5
        and heartbeat.limit_s
        == 2 * CheckSchedule.objects.get(cluster=cluster, kind="heartbeat").interval_s
    )
    assert parts[("queued_runs", None)].ok
    assert stale_words(status) is None


def test_a_check_past_twice_its_schedule_is_stale(cluster):
    _fresh(cluster)
    interval = CheckSchedule.objects.get(cluster=cluster, kind="heartbeat").interval_s
    CheckRun.objects.filter(kind="heartbeat").delete()
    _done(cluster, "heartbeat", 2 * interval + 30)
    status = pipeline_status()
    part = _parts(status)[("check:heartbeat", "c1")]
    assert not part.ok and part.age_s > part.limit_s
    assert not status.ok
    words = stale_words(status)
    assert words is not None and "No heartbeat check has completed on c1" in words
    assert words.endswith("What you see may be out of date.")
    # an error run that never started (swept) is no completed run
    CheckRun.objects.create(cluster=cluster, kind="heartbeat", status=RunStatus.ERROR)
    assert not _parts(pipeline_status())[("check:heartbeat", "c1")].ok


def test_silent_workers_and_beat_are_stale(cluster):
    _fresh(cluster)
    old = timezone.now() - dt.timedelta(seconds=120)
    # the worker fell silent 8 min before beat stopped pinging it: it is down
    heartbeats_record(["worker:celery@w1"], at=old - dt.timedelta(minutes=8))
    heartbeats_record(["beat"], at=old)
    status = pipeline_status()
    parts = _parts(status)
    assert not parts[("worker:celery@w1", None)].ok and not parts[("beat", None)].ok
    assert not status.workers_live()
    words = stale_words(status)
    assert "beat (which starts KUAE's checks) has not ticked for 2 min" in words
    assert "celery@w1 has not answered for 10 min" in words
    assert "the worker may be stopped or stalled" in words


def test_workers_unpinged_since_beat_stopped_are_not_said_down(cluster):
    """Beat sends the pings: a worker silent only since beat stopped is not said to be down
    (a real beat killed showed "the worker is not running" of a running worker)."""
    _fresh(cluster)
    now = timezone.now()
    heartbeats_record(["beat"], at=now - dt.timedelta(seconds=120))
    heartbeats_record(["worker:celery@w1"], at=now - dt.timedelta(seconds=118))
    for status in (pipeline_status(), detection_status()):
        assert not status.ok and not status.workers_live()
        words = stale_words(status)
        assert words.startswith("Beat (which starts KUAE's checks) has not ticked for 2 min")
        assert "the worker may be stopped or stalled" not in words and "answered" not in words
        assert "nothing is scheduled: no check starts and no worker is pinged" in words


def test_no_worker_ever_is_stale(cluster):
    _fresh(cluster)
    from apps.common.models import Heartbeat

    Heartbeat.objects.filter(part__startswith="worker:").delete()
    status = pipeline_status()
    assert not status.ok and not _parts(status)[("worker:*", None)].ok


def test_queued_run_older_than_its_interval_is_stale(cluster):
    _fresh(cluster)
    interval = CheckSchedule.objects.get(cluster=cluster, kind="heartbeat").interval_s
    run = CheckRun.objects.create(cluster=cluster, kind="heartbeat")
    assert _parts(pipeline_status())[("queued_runs", None)].ok
    CheckRun.objects.filter(pk=run.pk).update(
        queued_at=timezone.now() - dt.timedelta(seconds=interval + 5)
    )
    part = _parts(pipeline_status())[("queued_runs", None)]
    assert not part.ok and part.limit_s == interval


def test_a_run_queued_past_five_intervals_ends_as_error(cluster):
    schedules_ensure()
    interval = CheckSchedule.objects.get(cluster=cluster, kind="heartbeat").interval_s
    late = CheckRun.objects.create(cluster=cluster, kind="heartbeat")
    recent = CheckRun.objects.create(cluster=cluster, kind="heartbeat")
    now = timezone.now()
    CheckRun.objects.filter(pk=late.pk).update(
        queued_at=now - dt.timedelta(seconds=5 * interval + 1)
    )
    CheckRun.objects.filter(pk=recent.pk).update(
        queued_at=now - dt.timedelta(seconds=5 * interval - 5)
    )
    assert runs_sweep_unclaimed(now=now) == 1
    late.refresh_from_db()
    recent.refresh_from_db()
    assert (late.status, late.error) == (RunStatus.ERROR, NO_WORKER)
    assert recent.status == RunStatus.QUEUED


@override_settings(KUAE_SCRAPE_INTERVAL=30, KUAE_SLURM_SYNC_S=30)
def test_scraper_and_sync_shown_but_not_part_of_ok(cluster):
    _fresh(cluster)
    parts = _parts(pipeline_status())
    assert ("scraper", None) not in parts  # never ran here: not configured
    heartbeats_record(["scraper", "slurm_sync"], at=timezone.now() - dt.timedelta(hours=1))
    status = pipeline_status()
    parts = _parts(status)
    assert not parts[("scraper", None)].ok and not parts[("slurm_sync", None)].ok
    assert status.ok


def test_api_shape_and_roles(cluster, api):
    _fresh(cluster)
    assert api(None).get("/api/v1/pipeline/").status_code in (401, 403)
    assert api("ada").get("/api/v1/pipeline/").status_code == 403
    body = api("mia").get("/api/v1/pipeline/").json()
    assert body["ok"] is True
    names = {p["name"] for p in body["parts"]}
    assert {"beat", "worker:celery@w1", "queued_runs", "check:heartbeat"} <= names
    check = next(p for p in body["parts"] if p["name"] == "check:heartbeat")
    assert set(check) == {"name", "cluster", "last_ok_at", "age_s", "limit_s", "ok", "detail"}
    assert check["cluster"] == "c1"
    beat = next(p for p in body["parts"] if p["name"] == "beat")
    assert "cluster" not in beat


@override_settings(KUAE_METRICS_TOKEN="scrape")
def test_metrics_lines(cluster, client):
    _fresh(cluster)
    heartbeats_record(["beat"], at=timezone.now() - dt.timedelta(seconds=300))
    body = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape").content.decode()
    assert 'kuae_pipeline_part_ok{cluster="",part="beat"} 0.0' in body
    assert 'kuae_pipeline_part_ok{cluster="c1",part="check:heartbeat"} 1.0' in body
    assert 'kuae_pipeline_part_age_seconds{cluster="",part="beat"} 30' in body


def test_banner_on_a_page_when_stale_and_not_when_fresh(cluster, client, users):
    client.force_login(users["mia"])
    _fresh(cluster)
    page = client.get("/health/").content.decode()
    assert "pipeline-stale" not in page
    CheckRun.objects.filter(kind="heartbeat").update(
        started_at=timezone.now() - dt.timedelta(minutes=4)
    )
    cache.clear()
    page = client.get("/nodes/").content.decode()
    assert 'class="banner pipeline-stale" role="alert"' in page
    assert "No heartbeat check has completed on c1 for 4 min" in page
    assert "What you see may be out of date." in page


def test_the_banner_reads_one_query_and_agrees(cluster, django_assert_max_num_queries):
    from apps.health.pipeline import detection_status

    _fresh(cluster)
    with django_assert_max_num_queries(1):
        status = detection_status()
    assert status.ok and stale_words(status) is None
    heartbeats_record(["worker:celery@w1"], at=timezone.now() - dt.timedelta(minutes=4))
    run = CheckRun.objects.create(cluster=cluster, kind="heartbeat")
    CheckRun.objects.filter(pk=run.pk).update(queued_at=timezone.now() - dt.timedelta(hours=1))
    with django_assert_max_num_queries(1):
        status = detection_status()
    assert not status.ok
    words = stale_words(status)
    assert "no worker has answered for 4 min" in words and "waited 60 min" in words
    assert "the worker may be stopped or stalled" in words


def test_a_silent_worker_is_not_answering_not_not_running(cluster):
    """KUAE knows a worker stopped answering, never that it exited: a frozen (SIGSTOP)
    worker read "the worker is not running" and sent the operator the wrong way (issue 42)."""
    _fresh(cluster)
    heartbeats_record(["worker:celery@w1"], at=timezone.now() - dt.timedelta(minutes=3))
    for status in (pipeline_status(), detection_status()):
        words = stale_words(status)
        assert words is not None and "not running" not in words, words
        assert "has answered for 3 min" in words or "has not answered for 3 min" in words
        assert "— the worker may be stopped or stalled." in words, words


def test_a_worker_starting_a_task_has_answered(cluster):
    """A worker continued after a stall is live with the first task it starts, not only
    once a ping gets through its backlog (issue 42: the banner said no worker had answered
    for 3 min beside data 6 s old, 40 s after SIGCONT)."""
    from types import SimpleNamespace
    from unittest import mock

    from celery.signals import task_prerun

    from apps.common import heartbeats
    from apps.health.pipeline import CACHE_STALE_S, pipeline_status_cached

    _fresh(cluster)
    heartbeats_record(["worker:celery@w1"], at=timezone.now() - dt.timedelta(minutes=3))
    with mock.patch.object(cache, "set", wraps=cache.set) as cache_set:
        assert not pipeline_status_cached().ok
    assert cache_set.call_args.args[2] == CACHE_STALE_S  # a stale status is kept briefly
    heartbeats._answered.clear()
    eager = SimpleNamespace(request=SimpleNamespace(hostname="celery@web", is_eager=True))
    task_prerun.send(sender=None, task_id="t0", task=eager, args=(), kwargs={})
    assert not detection_status().ok  # a task run eagerly is no worker's answer
    task = SimpleNamespace(request=SimpleNamespace(hostname="celery@w1", is_eager=False))
    task_prerun.send(sender=None, task_id="t1", task=task, args=(), kwargs={})
    status = detection_status()
    assert status.ok and stale_words(status) is None
    # at most one write every ANSWER_EVERY_S per worker process
    assert not heartbeats.worker_answered("celery@w1")
    assert heartbeats.worker_answered("celery@w1", now=1e12)


def test_runs_waiting_for_a_worker_are_one_sentence_with_their_count(cluster):
    """Seven queued runs waiting 112 s read "a check run has waited 112 s for a worker"
    seven times (issue 42): one sentence, counted, with the longest wait."""
    _fresh(cluster)
    now = timezone.now()
    kinds = list(
        CheckSchedule.objects.filter(cluster=cluster, enabled=True, interval_s__lt=112)
        .order_by("kind")
        .values_list("kind", flat=True)
    )
    assert len(kinds) >= 3, kinds
    for i, kind in enumerate(kinds):
        run = CheckRun.objects.create(cluster=cluster, kind=kind)
        CheckRun.objects.filter(pk=run.pk).update(
            queued_at=now - dt.timedelta(seconds=112 if i == 0 else 100)
        )
    extra = CheckRun.objects.create(cluster=cluster, kind=kinds[0])  # a second of one kind
    CheckRun.objects.filter(pk=extra.pk).update(queued_at=now - dt.timedelta(seconds=100))
    for status in (pipeline_status(now=now), detection_status(now=now)):
        words = stale_words(status)
        assert words is not None
        assert words.count("waited") == 1, words
        assert f"{len(kinds) + 1} check runs have waited up to 112 s for a worker" in words
    CheckRun.objects.filter(status=RunStatus.QUEUED).exclude(pk=extra.pk).delete()
    words = stale_words(detection_status(now=now))
    assert words is not None and "A check run has waited 100 s for a worker" in words, words
