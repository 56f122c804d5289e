"""Where an agent token may write, about jobs (docs/operations.md#agent-tokens-and-scopes):
a job of its cluster and, for a node's token, one that runs on at least one of its nodes.

A node's token speaks only for its nodes, about a job too: it registers ranks on them and
reports stalls only for ranks registered on them, and it may add its own nodes to a job.
What is said of the job as a whole — ending it, removing nodes, resizing it, starting a
new attempt of ranks, job-wide samples — takes a token that speaks for the whole job
(`speaks_for_whole_job`): a cluster's or a whole-fleet relay's, or a node's whose nodes
hold rank 0 of the job's current attempt (or every node of a job with no ranks yet).

Built on the fleet's checks (apps/fleet/scope.py), which hold the scope itself; each is one
query at most, and a refusal is an `OutOfScope` (a 403 from the API's exception handler).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, NoReturn

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from apps.common.bulk import among
from apps.fleet.models import Cluster, Node
from apps.fleet.scope import refuse, require_cluster, scope_of
from apps.jobs.choices import ENDED_STATUSES
from apps.jobs.models import Job, Rank


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


def rank0_hostname(job: Job) -> tuple[bool, str | None]:
    """Whether the job has ranks registered, and the node that holds rank 0 of its current
    attempt (None: no ranks, or rank 0 not among the current attempt's). One read of the
    (job, attempt, rank) index, so a registration landing meanwhile cannot make "no ranks
    yet" read as "ranks without rank 0"."""
    top = (
        Rank.objects.filter(job_id=job.pk)
        .order_by("-attempt", "rank")
        .values_list("rank", "node__hostname")
        .first()
    )
    if top is None:
        return False, None
    rank, hostname = top
    return True, (hostname if rank == 0 else None)


def speaks_for_whole_job(user: Any, job: Job, *, before_ranks: bool = False) -> bool:
    """Whether `user` may say what concerns `job` as a whole. People, whole-fleet and
    cluster agents may; a node's token only when its nodes hold rank 0 of the job's current
    attempt or, while the job has no ranks registered, when every node of the job is one of
    its own (a one-node run's launcher) — or, with `before_ranks`, any node of the job (what
    job-wide samples need: rank 0's Reporter sends its first batch before its rank is
    registered). Call after `require_job`."""
    scope = scope_of(user)
    if scope is None or scope.hostnames is None:
        return True
    registered, holder = rank0_hostname(job)
    if holder is not None:
        return holder in scope.hostnames
    if registered:
        return False  # ranks registered, rank 0 not among the current attempt's
    if before_ranks:  # no verdict to bend yet: any node of the job (a Reporter's start-up)
        return True
    hostnames = set(
        Job.nodes.through.objects.filter(job_id=job.pk).values_list("node__hostname", flat=True)
    )
    return bool(hostnames) and hostnames <= scope.hostnames


def require_whole_job(user: Any, job: Job, what: str, *, before_ranks: bool = False) -> None:
    """OutOfScope unless `user` speaks for `job` as a whole (`speaks_for_whole_job`);
    `what` names the refused part of the write, e.g. `job-wide samples`."""
    if not speaks_for_whole_job(user, job, before_ranks=before_ranks):
        refuse(f"{what} of job {job.pk} (a node's token that does not hold rank 0)")


# Fields of a job only a token speaking for the whole job may change (ending it or
# resizing it); `status` only to an ended status, `ended_at` only to a time.
WHOLE_JOB_FIELDS = ("gpu_count", "n_params", "flops_per_token")


def require_job_change(
    user: Any, job: Job, values: Mapping[str, Any], nodes: Sequence[Node] | None
) -> None:
    """OutOfScope when a node's token that does not speak for the whole job would end it,
    resize it, remove its nodes or add nodes that are not its own (`PATCH jobs/{id}/`, or
    `POST jobs/` naming a known job). Fields given with the value they have change nothing
    and pass (a launcher re-posting its registration)."""
    scope = scope_of(user)
    if scope is None or scope.hostnames is None:
        return
    changed = [
        name for name in WHOLE_JOB_FIELDS if name in values and values[name] != getattr(job, name)
    ]
    status = values.get("status")
    if status in ENDED_STATUSES and status != job.status:
        changed.append("status")
    if values.get("ended_at") is not None and values["ended_at"] != job.ended_at:
        changed.append("ended_at")
    if nodes is not None:
        wanted = {n.hostname for n in nodes}
        have = set(
            Job.nodes.through.objects.filter(job_id=job.pk).values_list("node__hostname", flat=True)
        )
        added = wanted - have
        if added - scope.hostnames:
            refuse("nodes", sorted(added - scope.hostnames))
        if have - wanted:
            changed.append("nodes")
    if changed and not speaks_for_whole_job(user, job):
        refuse(
            f"changing {', '.join(changed)} of job {job.pk} "
            "(a node's token that does not hold rank 0)"
        )


def require_own_ranks(user: Any, job: Job, ranks: Collection[int], *, attempt: int | None) -> None:
    """OutOfScope naming the ranks of `attempt` that are registered on a node outside a
    node token's scope: it speaks only for ranks on its own nodes. One query."""
    scope = scope_of(user)
    if scope is None or scope.hostnames is None or attempt is None or not ranks:
        return
    rows = among(Rank.objects.filter(job_id=job.pk, attempt=attempt), "rank", sorted(set(ranks)))
    theirs = sorted(
        rank
        for rank, hostname in rows.values_list("rank", "node__hostname")
        if hostname not in scope.hostnames
    )
    if theirs:
        refuse(f"job {job.pk}'s {'rank' if len(theirs) == 1 else 'ranks'}", theirs)
