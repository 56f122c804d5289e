"""Repairs background work: read new drains, judge burn-ins. Thin: call services."""

from __future__ import annotations

from celery import shared_task

from apps.repairs.services import repairs_sync, repairs_tick


@shared_task(name="apps.repairs.tasks.repairs_sync", ignore_result=True)
def repairs_sync_task() -> dict[str, int]:
    """Open repairs for new drains and downs, close those returned outside (a short tick:
    the pages never open one themselves)."""
    return repairs_sync()


@shared_task(name="apps.repairs.tasks.repairs_tick", ignore_result=True)
def repairs_tick_task() -> dict[str, int]:
    """Open repairs for new drains and downs; return the nodes whose burn-in passed."""
    return repairs_tick()
