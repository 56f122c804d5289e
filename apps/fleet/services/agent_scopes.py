"""Setting where an agent account may write (docs/operations.md#agent-tokens-and-scopes)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.accounts.choices import Role
from apps.accounts.models import User
from apps.fleet.models import AgentScope, Cluster


@transaction.atomic
def agent_scope_set(*, user: User, cluster: str | None, hostlist: str = "") -> AgentScope | None:
    """Where an agent account may write: cluster `cluster` (a name) and, given a `hostlist`,
    only those nodes of it; `cluster=None` makes it a whole-fleet relay. Only an agent has a
    scope. ValueError naming the problem (unknown cluster, bad hostlist)."""
    if cluster is None:
        AgentScope.objects.filter(user=user).delete()
        return None
    if user.role != Role.AGENT:
        raise ValueError(f"only agent accounts are scoped; {user.username} is {user.role}")
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        raise ValueError(f"unknown cluster {cluster!r}")
    scope = AgentScope.objects.filter(user=user).first() or AgentScope(user=user)
    scope.cluster, scope.hostlist = found, (hostlist or "").strip()
    try:
        scope.full_clean(exclude=["user"])
    except ValidationError as exc:
        problems = (f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
        raise ValueError("; ".join(problems)) from exc
    scope.save()
    return scope
