"""Every write of the scheduler app (docs/slurm.md): Slurm job records in (`intake`), a
cluster's live sync (`sync`), and the actuation outbox, written with a node's state change
and delivered to its scheduler (`actuation`)."""

from apps.scheduler.services.actuation import (
    actuation_request,
    actuations_claim,
    actuations_deliver,
)
from apps.scheduler.services.intake import slurm_ingest, slurm_jobs_upsert
from apps.scheduler.services.sync import SyncReport, cluster_sync, clusters_to_sync, nodes_mirror

__all__ = [
    "SyncReport",
    "actuation_request",
    "actuations_claim",
    "actuations_deliver",
    "cluster_sync",
    "clusters_to_sync",
    "nodes_mirror",
    "slurm_ingest",
    "slurm_jobs_upsert",
]
