"""The KuaeWatchdog alert (docs/alertmanager.md, The watchdog): firing while detection
works, ended by the round after it stops, back when it works again."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.cache import cache
from django.test import override_settings
from django.utils import timezone

from apps.common.heartbeats import heartbeats_record
from apps.health.choices import RunStatus
from apps.health.models import CheckRun, CheckSchedule
from apps.health.services import schedules_ensure
from apps.incidents.alerts_out import alert_set, alerts_out_round
from apps.incidents.models import AlertPost

pytestmark = pytest.mark.django_db
AM = "http://am-1.example:9093"


def _working(cluster, at: dt.datetime) -> None:  # noqa: ANN001
    """Beat, a worker and every scheduled check worked at `at`."""
    schedules_ensure()
    heartbeats_record(["beat", "worker:celery@w1"], at=at)
    for kind in CheckSchedule.objects.filter(cluster=cluster).values_list("kind", flat=True):
        run = CheckRun.objects.create(cluster=cluster, kind=kind, status=RunStatus.DONE)
        CheckRun.objects.filter(pk=run.pk).update(queued_at=at, started_at=at, duration_s=0.1)


@override_settings(KUAE_ALERTMANAGER_URL=[AM], KUAE_BASE_URL="https://kuae.example.com")
def test_the_watchdog_fires_while_detection_works_and_ends_when_it_stops(cluster):
    cache.clear()
    now = timezone.now()
    _working(cluster, now)
    [watchdog] = [a for a in alert_set(now) if a.labels["alertname"] == "KuaeWatchdog"]
    assert watchdog.labels == {"alertname": "KuaeWatchdog", "severity": "none", "source": "kuae"}
    assert watchdog.annotations["url"] == "https://kuae.example.com/health/"
    alerts_out_round(now=now)
    row = AlertPost.objects.get(subject="watchdog")
    assert row.ends_at > now  # firing

    # Three minutes on, nothing has worked since (the worker frozen): the round ends it,
    # before it would have lapsed by itself (now + 4 repeat periods).
    later = now + dt.timedelta(minutes=3)
    assert not [a for a in alert_set(later) if a.labels["alertname"] == "KuaeWatchdog"]
    assert alerts_out_round(now=later)["ended"] == 1
    row.refresh_from_db()
    assert row.ends_at == later

    # Detection works again: the switch fires again.
    _working(cluster, later)
    alerts_out_round(now=later + dt.timedelta(seconds=1))
    row.refresh_from_db()
    assert row.ends_at > later + dt.timedelta(seconds=1)
