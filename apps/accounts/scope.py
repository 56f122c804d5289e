"""Where an agent token may write (docs/operations.md, Agent tokens and scopes) — checked here and
nowhere else.

Every intake calls one of these with what it is about to write, before it writes anything:
`require_nodes` (telemetry, Prometheus, events, heartbeats), `require_job` (job metrics,
checkpoints, preflight, `PATCH jobs/{id}/`), `require_job_nodes` (a job's cluster and nodes
on `POST`/`PATCH jobs/`), `require_cluster` (Slurm, Alertmanager). Each is set-based: at
most one query, whatever the batch's size. A refusal is a 403 naming what was outside the
scope; nothing has been stored by then.

An intake declares it makes these checks with `agent_scoped = True` on its view; a scoped
agent is refused by `RolePermission` on any view that does not, so a new intake that forgets
the check refuses scoped tokens instead of letting them write for the fleet.

Scopes bind accounts whose role is `agent`. People (operators launching jobs, admins) and
unscoped agents (whole-fleet relays) are not limited here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rest_framework.exceptions import PermissionDenied

from apps.accounts.choices import Role
from apps.accounts.models import AgentScope, describe_scope

if TYPE_CHECKING:
    from apps.fleet.models import Cluster
    from apps.jobs.models import Job

_CACHE = "_kuae_scope"
_SHOWN = 5  # names quoted in a refusal


@dataclass(frozen=True)
class Scope:
    """An agent's scope as the checks use it: its cluster and, for a node agent, its nodes."""

    cluster_id: int
    cluster_name: str
    hostnames: frozenset[str] | None  # None: every node of the cluster
    label: str  # `cluster c1, nodes gpu[001-004]`, for refusals

    @property
    def node_scoped(self) -> bool:
        """Limited to some nodes (not a cluster relay)."""
        return self.hostnames is not None


def scope_of(user: Any) -> Scope | None:
    """The scope that binds `user`'s writes; None when nothing does (a person, an admin, a
    whole-fleet agent). Worked out once per request (cached on the user object)."""
    if not getattr(user, "is_authenticated", False) or getattr(user, "role", None) != Role.AGENT:
        return None
    if hasattr(user, _CACHE):
        return getattr(user, _CACHE)
    # Token authentication reads the scope with the user (no query here); a session reads it.
    row: AgentScope | None = getattr(user, "agent_scope", None)
    scope = None
    if row is not None:
        scope = Scope(
            cluster_id=row.cluster_id,
            cluster_name=row.cluster.name,
            hostnames=frozenset(row.hostnames) if row.hostlist else None,
            label=describe_scope(row),
        )
    setattr(user, _CACHE, scope)
    return scope


def _refuse(scope: Scope, what: str, names: Iterable[object] = ()) -> None:
    shown = sorted(str(n) for n in names)
    more = f" (+{len(shown) - _SHOWN} more)" if len(shown) > _SHOWN else ""
    listed = f": {', '.join(shown[:_SHOWN])}{more}" if shown else ""
    raise PermissionDenied(f"this token writes for {scope.label} only; {what}{listed}")


def require_nodes(user: Any, hostnames: Collection[str]) -> None:
    """403 unless every node in `hostnames` is the token's to write for: one of its nodes (a
    node agent) or in its cluster. A name no node has yet is left for the intake to refuse
    (400 unknown node) when the scope would allow it."""
    scope = scope_of(user)
    if scope is None or not hostnames:
        return
    wanted = set(hostnames)
    if scope.hostnames is not None:
        outside = wanted - scope.hostnames
        if outside:
            _refuse(scope, "not its nodes", outside)
    from apps.fleet.models import Node

    elsewhere = (
        Node.objects.filter(hostname__in=wanted)
        .exclude(cluster_id=scope.cluster_id)
        .values_list("hostname", flat=True)
    )
    found = list(elsewhere[: _SHOWN + 1])
    if found:
        _refuse(scope, f"not in cluster {scope.cluster_name}", found)


def require_cluster(user: Any, cluster: Cluster | str | None, *, whole: bool = True) -> None:
    """403 unless the token may write for `cluster` (an object or a name). `whole`: the write
    is about the cluster as a whole (Slurm's job list, Alertmanager's alerts, a new job's
    cluster), which a node agent may not make unless `whole=False`."""
    scope = scope_of(user)
    if scope is None:
        return
    if whole and scope.node_scoped:
        _refuse(scope, "a node's token may not write for its whole cluster")
    name = cluster if isinstance(cluster, str) or cluster is None else cluster.name
    if name != scope.cluster_name:
        _refuse(scope, f"not cluster {name or '(none given)'}")


def require_job(user: Any, job: Job) -> None:
    """403 unless the token may write for `job`: a job of its cluster and, for a node agent,
    one that runs on at least one of its nodes."""
    scope = scope_of(user)
    if scope is None:
        return
    if job.cluster_id != scope.cluster_id:
        _refuse(scope, f"job {job.pk} is not in cluster {scope.cluster_name}")
    if scope.hostnames is not None:
        through = type(job).nodes.through
        if not through.objects.filter(
            job_id=job.pk, node__hostname__in=list(scope.hostnames)
        ).exists():
            _refuse(scope, f"job {job.pk} runs on none of its nodes")


def require_job_nodes(user: Any, cluster: Cluster, hostnames: Collection[str]) -> None:
    """A job registered or re-assigned by the token: its cluster must be the token's, and a
    node agent's job must run on at least one of the agent's nodes (a launcher registers the
    run it is part of). The other nodes must be in the cluster (the serializer checks)."""
    scope = scope_of(user)
    if scope is None:
        return
    require_cluster(user, cluster, whole=False)
    if scope.hostnames is not None and not scope.hostnames.intersection(hostnames):
        _refuse(scope, "the job runs on none of its nodes")


def answers_objects(user: Any) -> bool:
    """Whether a write answers with the object it wrote: not for agents, who never read
    (a write answers its status and counts)."""
    return getattr(user, "role", None) != Role.AGENT
