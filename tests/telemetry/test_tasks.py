"""Telemetry's tasks (`apps/telemetry/tasks.py`): beat names them as telemetry's, and a task
queued under the name it had as the fleet's (`apps.fleet.tasks.*`, before the upgrade) still
runs the same work on a new worker."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Node
from apps.fleet.services import NodeSpec, nodes_register
from apps.telemetry import tasks
from apps.telemetry.models import NodeRollup, TelemetryEvent
from kuaeweb.celery import app
from kuaeweb.schedule import beat_schedule

pytestmark = pytest.mark.django_db

OLD_NAMES = (
    "apps.fleet.tasks.scrape_round",
    "apps.fleet.tasks.scrape_chunk",
    "apps.fleet.tasks.prune_rollups",
)


def test_beat_sends_telemetrys_names_and_each_is_registered(settings):
    settings.KUAE_SCRAPE_INTERVAL = 30
    schedule = beat_schedule()
    assert schedule["scrape-exporters"]["task"] == tasks.scrape_round.name
    assert schedule["prune-rollups"]["task"] == tasks.prune_rollups.name
    assert tasks.scrape_round.name == "apps.telemetry.tasks.scrape_round"
    assert not any(entry["task"].startswith("apps.fleet.") for entry in schedule.values())
    app.loader.import_default_modules()  # every app's tasks, as a worker starting up does
    for entry in schedule.values():
        assert entry["task"] in app.tasks, entry["task"]


def test_the_old_names_are_still_registered_and_run_the_same_work(cluster, exporter):
    for name in OLD_NAMES:
        assert name in app.tasks, name
    now = timezone.now()
    nodes = nodes_register(
        cluster=cluster,
        specs=[NodeSpec(hostname="gpu-a017", exporter_url=f"{exporter}/metrics")],
    )
    # A chunk queued by the old beat: scraped and stored as the new task does.
    result = app.tasks["apps.fleet.tasks.scrape_chunk"].apply(([n.pk for n in nodes],)).get()
    assert result["up"] == 1 and Node.objects.get(hostname="gpu-a017").scrape_ok is True
    # A round: fanned out under the new chunk name (eager here), every node scraped again.
    app.conf.task_always_eager = True
    try:
        assert app.tasks["apps.fleet.tasks.scrape_round"].apply().get() == 1
    finally:
        app.conf.task_always_eager = False
    assert Node.objects.get(hostname="gpu-a017").scraped_at >= now
    # Retention: the rollups past the age go.
    node = nodes[0]
    kept, old = (
        NodeRollup.objects.create(node=node, bucket=now - dt.timedelta(days=days)).pk
        for days in (1, 400)
    )
    assert app.tasks["apps.fleet.tasks.prune_rollups"].apply().get() == 1
    assert NodeRollup.objects.filter(pk=kept).exists()
    assert not NodeRollup.objects.filter(pk=old).exists()


def test_events_are_pruned_past_their_retention_age(cluster, settings):
    """issue 41: telemetry events grew without a bound (docs/operations.md, Backups)."""
    assert settings.KUAE_RETAIN_EVENTS_DAYS == 90
    assert beat_schedule()["prune-events"]["task"] == tasks.prune_events.name
    (node,) = nodes_register(cluster=cluster, specs=[NodeSpec(hostname="gpu-a017")])
    now = timezone.now()
    kept, old = (
        TelemetryEvent.objects.create(
            node=node, gpu=0, at=now - dt.timedelta(days=days), kind="xid", value=79, code=79
        ).pk
        for days in (89, 91)
    )
    assert app.tasks["apps.telemetry.tasks.prune_events"].apply().get() == 1
    assert list(TelemetryEvent.objects.values_list("pk", flat=True)) == [kept]
    assert old != kept
