"""A real Celery worker, over the configured broker (Redis in CI), runs a task against the
test database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from apps.fleet.models import Node
from apps.fleet.services import NodeSpec, nodes_register
from apps.health.checks import SCHEDULED_KINDS
from apps.health.models import CheckRun, CheckSchedule
from apps.health.tasks import health_tick
from apps.simulator.tasks import demo_tick
from tests.support import simulate

ROOT = Path(__file__).resolve().parent.parent


def _database_url() -> str:
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    user, host, port = db["USER"] or "postgres", db["HOST"] or "127.0.0.1", db["PORT"] or 5432
    return f"postgres://{user}@{host}:{port}/{db['NAME']}"


@contextmanager
def worker(queue: str) -> Iterator[list[str]]:
    """A real `celery worker` process on a queue of its own (no other worker takes its tasks),
    against the test database and the configured broker. Yields its output once stopped."""
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "KUAE_DEMO": "1",
        "KUAE_TESTING": "1",
        "KUAE_VAR_DIR": str(settings.VAR_DIR),
        "KUAE_QUEUE": queue,
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "kuaeweb",
            "worker",
            "--pool=solo",
            "-Q",
            queue,
            "--without-gossip",
            "--without-mingle",
            "--loglevel=INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    try:
        yield output
    finally:
        proc.terminate()
        try:
            output.append(proc.communicate(timeout=30)[0])
        except subprocess.TimeoutExpired:
            proc.kill()
            output.append(proc.communicate()[0])


def wait_for(predicate: Callable[[], bool], seconds: float = 90) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return False


@pytest.mark.embedded
@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_worker_runs_a_task_sent_through_the_broker():
    simulate(gpus=64, days=1, seed=1)
    started = timezone.now()
    queue = f"test-{uuid.uuid4().hex[:8]}"
    with worker(queue) as output:
        demo_tick.apply_async(queue=queue)
        ran = wait_for(lambda: Node.objects.filter(last_heartbeat_at__gte=started).exists())
    assert ran, output
    assert "demo_tick" in output[0] and "succeeded" in output[0], output[0][-3000:]


@pytest.mark.embedded
@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_a_scheduled_check_run_lands(cluster):
    from kuaeweb.celery import app

    nodes_register(cluster=cluster, specs=[NodeSpec(hostname=f"w{i}") for i in range(4)])
    queue = f"test-{uuid.uuid4().hex[:8]}"
    default = app.conf.task_default_queue
    app.conf.task_default_queue = queue
    try:
        with worker(queue) as output:
            health_tick.apply_async(queue=queue)  # what beat sends every 10 s
            landed = wait_for(
                lambda: (
                    CheckRun.objects.filter(requested_by="schedule", status="done").count()
                    == len(SCHEDULED_KINDS)
                )
            )
    finally:
        app.conf.task_default_queue = default
    assert landed, (list(CheckRun.objects.values_list("kind", "status", "error")), output)
    assert CheckSchedule.objects.filter(cluster=cluster).count() == len(SCHEDULED_KINDS)
