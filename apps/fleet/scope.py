"""Where an agent token may write (docs/operations.md#agent-tokens-and-scopes): the checks
on clusters and nodes. Those on jobs are apps/jobs/scope.py, above the fleet, built on these.

Every intake calls one of them with what it is about to write, before it writes anything:
`require_nodes` (telemetry, Prometheus, events, heartbeats, topology), `require_cluster`
(Slurm, Alertmanager), and the jobs' `require_job`/`require_job_nodes`. Each is set-based:
at most one query, whatever the batch's size. A refusal is an `OutOfScope` naming what was
outside the scope (a 403 from the API's exception handler); nothing has been stored by then.

An intake declares it makes these checks with `agent_scoped = True` on its view; a scoped
agent is refused by `RolePermission` on any view that does not (through `is_scoped`, lent to
apps/accounts/scoping.py by `FleetConfig.ready()`), so a new intake that forgets the check
refuses scoped tokens instead of letting them write for the fleet.

Scopes bind accounts whose role is `agent`. People (operators launching jobs, admins) and
unscoped agents (whole-fleet relays) are not limited here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

from apps.accounts.choices import Role
from apps.common.bulk import among
from apps.common.errors import OutOfScope
from apps.fleet.models import AgentScope, Cluster, Node, describe_scope

_CACHE = "_kuae_scope"
_SHOWN = 5  # names quoted in a refusal
# What token authentication reads with the user, so `scope_of` needs no query.
USER_RELATED = ("agent_scope__cluster",)


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


def is_scoped(user: Any) -> bool:
    """Whether any scope binds `user`'s writes (what `RolePermission` asks)."""
    return scope_of(user) is not None


def refuse(what: str, names: Iterable[object] = ()) -> NoReturn:
    """Raise the refusal of a write outside the token's scope. It names the items as the
    request gave them (`what`, then up to five of `names`) and says they are outside the
    token's scope: never where they are or whether they exist, so another cluster's node or
    job and one that does not exist answer alike (docs/operations.md#agent-tokens-and-scopes)."""
    shown = sorted(str(n) for n in names)
    more = f" (+{len(shown) - _SHOWN} more)" if len(shown) > _SHOWN else ""
    listed = f" {', '.join(shown[:_SHOWN])}{more}" if shown else ""
    raise OutOfScope(f"{what}{listed}: outside this token's scope")


def refuse_nodes(names: Collection[str]) -> NoReturn:
    """`refuse` for hostnames: `node NAME` or `nodes A, B`."""
    refuse("node" if len(names) == 1 else "nodes", names)


def require_nodes(user: Any, hostnames: Collection[str]) -> None:
    """OutOfScope unless every node in `hostnames` is the token's to write for: a node of its
    cluster and, for a node agent, one of its nodes. A name that is no node of its cluster —
    another cluster's or nobody's — is refused alike, so a refusal tells nothing about
    where a node is or whether it exists."""
    scope = scope_of(user)
    if scope is None or not hostnames:
        return
    wanted = set(hostnames)
    if scope.hostnames is not None:
        outside = wanted - scope.hostnames
        if outside:
            refuse_nodes(outside)
    ours = set(
        among(
            Node.objects.filter(cluster_id=scope.cluster_id), "hostname", list(wanted)
        ).values_list("hostname", flat=True)
    )
    if len(ours) < len(wanted):
        refuse_nodes(wanted - ours)


def require_cluster(user: Any, cluster: Cluster | str | None, *, whole: bool = True) -> None:
    """OutOfScope unless the token may write for `cluster` (an object or a name). `whole`: the
    write is about the cluster as a whole (Slurm's job list, Alertmanager's alerts, a new
    job's cluster), which a node agent may not make unless `whole=False`."""
    scope = scope_of(user)
    if scope is None:
        return
    name = cluster if isinstance(cluster, str) or cluster is None else cluster.name
    if whole and scope.node_scoped:
        refuse(f"cluster {name or '(none given)'} as a whole (a node's token)")
    if name != scope.cluster_name:
        refuse(f"cluster {name or '(none given)'}")
