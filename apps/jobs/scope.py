"""Where an agent token may write, about jobs (docs/operations.md#agent-tokens-and-scopes):
a job of its cluster and, for a node's token, one that runs on at least one of its nodes.

Built on the fleet's checks (apps/fleet/scope.py), which hold the scope itself; each is one
query at most, and a refusal is an `OutOfScope` (a 403 from the API's exception handler).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any, NoReturn

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from apps.fleet.models import Cluster
from apps.fleet.scope import refuse, require_cluster, scope_of
from apps.jobs.models import Job


def _refuse_jobs(pks: Iterable[object]) -> NoReturn:
    shown = list(pks)
    refuse("job" if len(shown) == 1 else "jobs", shown)


def job_for_write(user: Any, pk: int, queryset: QuerySet[Job] | None = None) -> Job:
    """The job `pk` that `user` is about to write for. A person or an unscoped agent gets a
    404 for a job that does not exist; a scoped agent gets the same 403 for a job that does
    not exist as for one outside its scope, so it learns nothing of jobs elsewhere."""
    queryset = Job.objects.all() if queryset is None else queryset
    if scope_of(user) is None:
        return get_object_or_404(queryset, pk=pk)
    job = queryset.filter(pk=pk).first()
    if job is None:
        _refuse_jobs([pk])
    require_job(user, job)
    return job


def require_job(user: Any, job: Job) -> None:
    """OutOfScope unless the token may write for `job`: a job of its cluster and, for a node
    agent, one that runs on at least one of its nodes."""
    scope = scope_of(user)
    if scope is None:
        return
    if job.cluster_id != scope.cluster_id:
        _refuse_jobs([job.pk])
    if scope.hostnames is not None:
        on_its_nodes = Job.nodes.through.objects.filter(
            job_id=job.pk, node__hostname__in=list(scope.hostnames)
        )
        if not on_its_nodes.exists():
            _refuse_jobs([job.pk])


def require_job_nodes(user: Any, cluster: Cluster, hostnames: Collection[str]) -> None:
    """A job registered or re-assigned by the token: its cluster must be the token's, and a
    node agent's job must run on at least one of the agent's nodes (a launcher registers the
    run it is part of). The other nodes must be in the cluster (the serializer checks)."""
    scope = scope_of(user)
    if scope is None:
        return
    require_cluster(user, cluster, whole=False)
    if scope.hostnames is not None and not scope.hostnames.intersection(hostnames):
        refuse("the job's nodes", sorted(hostnames))


def require_jobs(user: Any, jobs: Sequence[Job], asked: Collection[int] = ()) -> None:
    """`require_job` for a batch naming many jobs (stall reports), in one query at most:
    OutOfScope naming the jobs the token may not write for. `asked`: every id the request
    named; those not among `jobs` (no such job) are refused alike."""
    scope = scope_of(user)
    if scope is None:
        return
    missing = sorted(set(asked) - {j.pk for j in jobs})
    elsewhere = sorted(j.pk for j in jobs if j.cluster_id != scope.cluster_id)
    if missing or elsewhere:
        _refuse_jobs(sorted(missing + elsewhere))
    if scope.hostnames is not None and jobs:
        ours = set(
            Job.nodes.through.objects.filter(
                job_id__in=[j.pk for j in jobs], node__hostname__in=list(scope.hostnames)
            ).values_list("job_id", flat=True)
        )
        outside = sorted(j.pk for j in jobs if j.pk not in ours)
        if outside:
            _refuse_jobs(outside)
