"""A real Celery worker, over the configured broker (Redis in CI), runs a task against the
test database."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from apps.fleet.models import Node
from apps.simulator.tasks import demo_tick

ROOT = Path(__file__).resolve().parent.parent


def _database_url() -> str:
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    user, host, port = db["USER"] or "postgres", db["HOST"] or "127.0.0.1", db["PORT"] or 5432
    return f"postgres://{user}@{host}:{port}/{db['NAME']}"


@pytest.mark.embedded
@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_worker_runs_a_task_sent_through_the_broker(tmp_path):
    call_command("simulate", gpus=64, days=1, seed=1, stdout=io.StringIO(), stderr=io.StringIO())
    started = timezone.now()
    queue = f"test-{uuid.uuid4().hex[:8]}"  # a queue of its own: no other worker takes the task
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "KUAE_DEMO": "1",
        "KUAE_TESTING": "1",
        "KUAE_VAR_DIR": str(settings.VAR_DIR),
    }
    worker = subprocess.Popen(
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
    try:
        demo_tick.apply_async(queue=queue)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if Node.objects.filter(last_heartbeat_at__gte=started).exists():
                break
            time.sleep(0.5)
        assert Node.objects.filter(last_heartbeat_at__gte=started).count() > 0, "task never ran"
    finally:
        worker.terminate()
        try:
            output = worker.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            worker.kill()
            output = worker.communicate()[0]
    assert "demo_tick" in output and "succeeded" in output, output[-3000:]
