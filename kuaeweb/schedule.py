"""Every periodic task, declared in one place."""

from __future__ import annotations

from typing import Any

from django.conf import settings


def beat_schedule() -> dict[str, dict[str, Any]]:
    """The beat schedule; the live demo tick only runs with KUAE_DEMO=1."""
    schedule: dict[str, dict[str, Any]] = {}
    if settings.DEMO:
        schedule["demo-tick"] = {"task": "apps.simulator.tasks.demo_tick", "schedule": 15.0}
    return schedule
