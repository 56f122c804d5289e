"""Scheduler background work: the live sync and the actuation outbox. Thin: call services."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from apps.common.heartbeats import heartbeats_record
from apps.fleet.models import Cluster
from apps.scheduler.services import actuations_deliver, cluster_sync, clusters_to_sync


@shared_task(name="apps.scheduler.tasks.sync_round", ignore_result=True)
def sync_round() -> int:
    """Start one sync per cluster that names a scheduler; returns how many."""
    ids = clusters_to_sync()
    for cluster in Cluster.objects.filter(pk__in=ids).only("pk", "queue"):
        # a sync still queued when the next round starts is dropped, not piled up; a
        # cluster with a queue of its own syncs on its own workers
        sync_cluster.apply_async(
            (cluster.pk,), expires=settings.KUAE_SLURM_SYNC_S, **cluster.task_options()
        )
    if ids:  # the `slurm_sync` part (docs/operations.md, Watching the watcher)
        heartbeats_record(["slurm_sync"])
    return len(ids)


@shared_task(name="apps.scheduler.tasks.sync_cluster", ignore_result=True)
def sync_cluster(cluster_id: int) -> bool:
    """Sync one cluster with its scheduler; False when it failed (recorded on the cluster)."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    return cluster is not None and cluster_sync(cluster=cluster).ok


@shared_task(name="apps.scheduler.tasks.deliver_actuations", ignore_result=True)
def deliver_actuations() -> dict[str, int]:
    """Send the due drains and resumes of every cluster."""
    return actuations_deliver()
