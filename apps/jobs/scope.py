"""Where an agent token may write, about jobs (docs/operations.md#agent-tokens-and-scopes):
a job of its cluster and, for a node's token, one that runs on at least one of its nodes.

Built on the fleet's checks (apps/fleet/scope.py), which hold the scope itself; each is one
query at most, and a refusal is an `OutOfScope` (a 403 from the API's exception handler).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from apps.fleet.models import Cluster
from apps.fleet.scope import refuse, require_cluster, scope_of
from apps.jobs.models import Job


def require_job(user: Any, job: Job) -> None:
    """OutOfScope unless the token may write for `job`: a job of its cluster and, for a node
    agent, one that runs on at least one of its nodes."""
    scope = scope_of(user)
    if scope is None:
        return
    if job.cluster_id != scope.cluster_id:
        refuse(scope, f"job {job.pk} is not in cluster {scope.cluster_name}")
    if scope.hostnames is not None:
        on_its_nodes = Job.nodes.through.objects.filter(
            job_id=job.pk, node__hostname__in=list(scope.hostnames)
        )
        if not on_its_nodes.exists():
            refuse(scope, f"job {job.pk} runs on none of its nodes")


def require_job_nodes(user: Any, cluster: Cluster, hostnames: Collection[str]) -> None:
    """A job registered or re-assigned by the token: its cluster must be the token's, and a
    node agent's job must run on at least one of the agent's nodes (a launcher registers the
    run it is part of). The other nodes must be in the cluster (the serializer checks)."""
    scope = scope_of(user)
    if scope is None:
        return
    require_cluster(user, cluster, whole=False)
    if scope.hostnames is not None and not scope.hostnames.intersection(hostnames):
        refuse(scope, "the job runs on none of its nodes")


def require_jobs(user: Any, jobs: Sequence[Job]) -> None:
    """`require_job` for a batch naming many jobs (stall reports), in one query at most:
    OutOfScope naming the jobs the token may not write for."""
    scope = scope_of(user)
    if scope is None or not jobs:
        return
    elsewhere = sorted(j.pk for j in jobs if j.cluster_id != scope.cluster_id)
    if elsewhere:
        refuse(scope, f"not jobs of cluster {scope.cluster_name}", elsewhere)
    if scope.hostnames is not None:
        ours = set(
            Job.nodes.through.objects.filter(
                job_id__in=[j.pk for j in jobs], node__hostname__in=list(scope.hostnames)
            ).values_list("job_id", flat=True)
        )
        outside = sorted(j.pk for j in jobs if j.pk not in ours)
        if outside:
            refuse(scope, "jobs that run on none of its nodes", outside)
