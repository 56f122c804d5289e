"""Job background work: step-metric and stall-stack retention. Thin: call services."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from apps.jobs.services import job_metrics_prune, rank_stacks_prune


@shared_task(name="apps.jobs.tasks.prune_metrics", ignore_result=True)
def prune_metrics() -> int:
    """Delete step samples past the retention age."""
    return job_metrics_prune(older_than_days=settings.KUAE_RETAIN_METRICS_DAYS)


@shared_task(name="apps.jobs.tasks.prune_stacks", ignore_result=True)
def prune_stacks() -> int:
    """Delete stall stacks no rank points at any more."""
    return rank_stacks_prune()
