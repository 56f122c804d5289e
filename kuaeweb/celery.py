"""The Celery application; beat schedules are declared once, in `kuaeweb.schedule`."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import task_prerun

from apps.common import fsbroker

fsbroker.install()  # before any connection: filesystem:// writes whole messages
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kuaeweb.settings")

app = Celery("kuaeweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _install_schedule(sender: Celery, **_: object) -> None:
    from kuaeweb.schedule import beat_schedule

    sender.conf.beat_schedule = beat_schedule()


@task_prerun.connect
def _worker_answered(task: Any = None, **_: object) -> None:
    """Every task a worker starts is an answer from that worker
    (docs/operations.md, Watching the watcher); a task run eagerly, in the web process or
    a test, is not."""
    request = getattr(task, "request", None)
    hostname = getattr(request, "hostname", None)
    if not hostname or getattr(request, "is_eager", False):
        return
    from apps.common.heartbeats import worker_answered

    worker_answered(str(hostname))
