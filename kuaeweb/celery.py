"""The Celery application; beat schedules are declared once, in `kuaeweb.schedule`."""

from __future__ import annotations

import os

from celery import Celery

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
