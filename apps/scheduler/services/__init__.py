"""Every write of the scheduler app (docs/slurm.md): Slurm job records in (`intake`), a
cluster's live sync (`sync`) and the delivery of the actuation outbox."""

from apps.scheduler.services.intake import slurm_ingest, slurm_jobs_upsert
from apps.scheduler.services.sync import (
    SyncReport,
    actuations_claim,
    actuations_deliver,
    cluster_sync,
    clusters_to_sync,
    nodes_mirror,
)

__all__ = [
    "SyncReport",
    "actuations_claim",
    "actuations_deliver",
    "cluster_sync",
    "clusters_to_sync",
    "nodes_mirror",
    "slurm_ingest",
    "slurm_jobs_upsert",
]
