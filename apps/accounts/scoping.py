"""What accounts needs to know of an agent token's scope, lent by the fleet at start-up.

Where an agent token may write (docs/operations.md#agent-tokens-and-scopes) is the fleet's
data — `fleet.AgentScope`, checked by apps/fleet/scope.py and apps/jobs/scope.py — and
accounts imports no app but common. Two things down here still depend on it, and
`FleetConfig.ready()` lends them, as the apps above the fleet lend it readers
(apps/fleet/readers.py):

- whether a user's writes are bound to part of the fleet, so `RolePermission` refuses a
  scoped agent on any view that does not check the scope (`agent_scoped = True`);
- the relations of a user that token authentication reads with it (the scope and its
  cluster), so the scope checks of a token's request cost no query.

Until lent (`FleetConfig.ready()` not run) nothing is answered: reading either raises
`ImproperlyConfigured`, so no agent is let through, and start-up fails on it
(apps/common/lending.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apps.common.lending import Registry

IsScoped = Callable[[Any], bool]


_lent = Registry(
    "apps.accounts.scoping",
    lenders={"is_scoped": "the fleet app", "user_related": "the fleet app"},
)


def lend(*, is_scoped: IsScoped, user_related: tuple[str, ...] = ()) -> None:
    """Register the test of whether a user's writes are scoped, and the user's relations
    (`select_related` paths from the user) that the test reads."""
    _lent["is_scoped"] = is_scoped
    _lent["user_related"] = tuple(user_related)


def is_scoped(user: Any) -> bool:
    """Whether `user`'s writes are limited to part of the fleet (a scoped agent)."""
    return bool(_lent["is_scoped"](user))


def user_related() -> tuple[str, ...]:
    """The `select_related` paths, from a user, that `is_scoped` and the scope checks read."""
    related: tuple[str, ...] = _lent["user_related"]
    return related
