"""Maintenance background work: the tick that starts and ends windows. Thin: call services."""

from __future__ import annotations

from celery import shared_task

from apps.maintenance.services import windows_tick


@shared_task(name="apps.maintenance.tasks.maintenance_tick", ignore_result=True)
def maintenance_tick() -> dict[str, int]:
    """Start the windows whose start has come, end those whose end has."""
    return windows_tick()
