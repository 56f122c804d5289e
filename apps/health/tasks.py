"""Health background work: the schedule tick, check runs, run retention. Thin: call services."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from apps.health import services


@shared_task(name="apps.health.tasks.health_tick", ignore_result=True)
def health_tick() -> int:
    """End runs no worker took in 5 × their interval, then queue every (cluster, kind) that
    is due; returns how many runs were queued."""
    services.runs_sweep_unclaimed()
    return len(services.schedules_claim_due())


@shared_task(name="apps.health.tasks.run_check", ignore_result=True, acks_late=True)
def run_check_task(run_id: int) -> str | None:
    """Run one queued check (a no-op if another worker already claimed it)."""
    run = services.run_execute(run_id=run_id)
    return run.status if run else None


@shared_task(name="apps.health.tasks.prune_runs", ignore_result=True)
def prune_runs() -> int:
    """Delete check runs past the retention age."""
    return services.runs_prune(older_than_days=settings.KUAE_RETAIN_RUNS_DAYS)
