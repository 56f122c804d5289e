"""A cluster with a Celery queue of its own is stale while no live worker consumes that
queue (docs/operations.md, Watching the watcher): the `queue` part, from what each worker
says it consumes when it answers the broadcast — real worker answers, and stored rows."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.core.cache import cache
from django.utils import timezone

from apps.common.heartbeats import workers_record
from apps.common.models import Heartbeat
from apps.common.tasks import ping_workers
from apps.fleet.models import Cluster
from apps.health.pipeline import detection_status, pipeline_status, stale_words
from apps.health.services import schedules_ensure
from tests.health.test_pipeline import _fresh
from tests.test_celery_worker import wait_for, worker

pytestmark = pytest.mark.django_db

QUEUE = "checks.c1"


@pytest.fixture(autouse=True)
def _no_cached_status():
    cache.clear()
    yield
    cache.clear()


def _queue_part(status, cluster: str = "c1"):  # noqa: ANN001, ANN202
    (part,) = [p for p in status.parts if p.name == "queue" and p.cluster == cluster]
    return part


def test_a_clusters_queue_no_live_worker_consumes_is_stale(cluster):
    _fresh(cluster)  # a live worker, on the shared queue only (it says none of its own)
    assert detection_status().ok and not [p for p in pipeline_status().parts if p.name == "queue"]
    Cluster.objects.filter(pk=cluster.pk).update(queue=QUEUE)
    workers_record({"celery@w1": ["celery"]})
    for status in (pipeline_status(), detection_status()):
        part = _queue_part(status)
        assert not part.ok and part.last_ok_at is None and part.detail == QUEUE
        assert not status.ok
        words = stale_words(status)
        assert words and "no worker takes cluster c1's queue checks.c1" in words.lower(), words
        assert "the worker may be stopped or stalled" not in words  # one is; it takes other queues
    # A worker that consumes it answers: the part is fresh, and so is the pipeline.
    workers_record({"celery@big1": ["checks.c1", "celery"]})
    for status in (pipeline_status(), detection_status()):
        assert _queue_part(status).ok and status.ok, [p for p in status.parts if not p.ok]
    # It stops answering: stale again, saying for how long.
    Heartbeat.objects.filter(part="worker:celery@big1").update(
        at=timezone.now() - dt.timedelta(minutes=10)
    )
    for status in (pipeline_status(), detection_status()):
        part = _queue_part(status)
        assert not part.ok and round(part.age_s) == 600
        assert (
            "no worker takes cluster c1's queue checks.c1 (none has for 10 min)"
            in (stale_words(status) or "").lower()
        )
    # a queue whose name is a prefix of another's is not taken by it
    workers_record({"celery@big2": ["checks.c10"]})
    assert not _queue_part(detection_status()).ok and not _queue_part(pipeline_status()).ok


def test_the_api_and_metrics_name_the_queue_part(cluster, api):
    _fresh(cluster)
    Cluster.objects.filter(pk=cluster.pk).update(queue=QUEUE)
    body = api("mia").get("/api/v1/pipeline/").json()
    (part,) = [p for p in body["parts"] if p["name"] == "queue"]
    assert part["cluster"] == "c1" and part["ok"] is False and body["ok"] is False


@pytest.mark.embedded
@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_ping_learns_which_queues_a_real_worker_consumes(cluster):
    own = f"test-q-{uuid.uuid4().hex[:8]}"
    Cluster.objects.filter(pk=cluster.pk).update(queue=own)
    schedules_ensure()
    mine = Heartbeat.objects.filter(part__startswith="worker:", queues__contains=f",{own},")
    with worker(own) as output:
        # Until ours is up, other tests' workers on a shared broker may answer the ping:
        # wait for the answer that names this queue.
        answered = wait_for(lambda: ping_workers(timeout_s=1.0) > 0 and mine.exists(), seconds=60)
        assert answered, output
    (row,) = mine
    assert row.part.startswith("worker:celery@")  # the part name stays the ping's
    assert _queue_part(pipeline_status()).ok and _queue_part(detection_status()).ok
