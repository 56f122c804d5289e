"""Celery tasks of the simulator: the live demo tick."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from apps.simulator.demo import demo_tick as run_tick


@shared_task(name="apps.simulator.tasks.demo_tick", ignore_result=True)
def demo_tick() -> dict[str, int] | None:
    """Advance the simulated clusters (only with KUAE_DEMO=1)."""
    if not settings.DEMO:
        return None
    return run_tick()
