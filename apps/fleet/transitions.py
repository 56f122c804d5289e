"""What must be written with a node's state change, in its transaction, lent from above.

A drain in KUAE must reach the scheduler (docs/slurm.md, Actuation): its outbox row is
written in the same database transaction as the state change, so the two commit or roll
back together and a worker that dies loses nothing. Deciding it needs what only the change
knows, under the node's row lock: the state before, and whether the change is the node's
newest (a back-filled one sends nothing). The fleet knows no scheduler, so the scheduler app
lends its writer here from its `AppConfig.ready()` (docs/architecture.md, Readers lent
downwards), and `node_set_state` calls every follower lent before it returns.

A follower writes only its own app's rows; an error in it rolls the state change back, as
a failed outbox write must.
"""

from __future__ import annotations

from typing import Protocol

from apps.common.lending import Registry
from apps.fleet.models import Node, NodeStateChange


class Follower(Protocol):
    """Called inside the state change's transaction with the node, the change (already
    saved) and the states before and after it."""

    def __call__(
        self, *, node: Node, change: NodeStateChange, before: str, after: str
    ) -> object: ...


_lent = Registry(
    "apps.fleet.transitions",
    lenders={
        "scheduler.actuation": "the scheduler app",
        "incidents.mitigation": "the incidents app",
    },
)


def follow(*, name: str, follower: Follower) -> None:
    """Have `follower` called with every state change that becomes a node's current state.
    Lending under the same `name` again replaces it, so a second `ready()` adds nothing."""
    _lent[name] = follower


def followers() -> list[Follower]:
    """The followers lent, in the order they were lent; `ImproperlyConfigured` while one the
    fleet expects (the scheduler's actuation) is missing, so no drain goes unsent quietly."""
    _lent.require()
    return list(_lent.values())


def lent_names() -> list[str]:
    """The names the followers were lent under (for tests and checks)."""
    return list(_lent)
