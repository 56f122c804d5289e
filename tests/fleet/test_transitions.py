"""What the apps above lend to a node's state change (`apps/fleet/transitions.py`): called
inside its transaction, with the states before and after, for a change that becomes the
node's current state — never for a back-filled one — and an error in it undoes the change."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.utils import timezone

from apps.common.lending import Registry
from apps.fleet import transitions
from apps.fleet.models import Node, NodeStateChange
from apps.fleet.services import node_set_state


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, str, str, bool]]:
    """Lend a follower that records (host, change id, before, after, in a transaction)."""
    calls: list[tuple[str, int, str, str, bool]] = []

    def record(*, node: Node, change: NodeStateChange, before: str, after: str) -> None:
        calls.append((node.hostname, change.pk, before, after, connection.in_atomic_block))

    monkeypatch.setitem(transitions._lent, "test.record", record)
    return calls


def test_a_follower_sees_each_current_change_inside_its_transaction(
    nodes: list[Node], seen: list
) -> None:
    drained = node_set_state(node=nodes[0], state="drained", reason="xid", source="check")
    back = node_set_state(node=nodes[0], state="healthy", reason="fixed", by="otto")
    assert seen == [
        ("gpu000", drained.pk, "healthy", "drained", True),
        ("gpu000", back.pk, "drained", "healthy", True),
    ]
    node_set_state(
        node=nodes[0], state="down", reason="history", at=timezone.now() - dt.timedelta(days=3)
    )
    assert len(seen) == 2  # a back-filled change only adds history: no follower is called


def test_a_follower_that_fails_undoes_the_state_change(
    nodes: list[Node], monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(**_: object) -> None:
        raise RuntimeError("its write failed")

    monkeypatch.setitem(transitions._lent, "test.failing", failing)
    with pytest.raises(RuntimeError):
        node_set_state(node=nodes[0], state="drained", reason="xid", source="check")
    node = Node.objects.get(pk=nodes[0].pk)
    assert node.state == "healthy" and not node.state_changes.filter(state="drained").exists()


def test_lending_again_under_a_name_replaces_the_follower(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transitions, "_lent", Registry("test.transitions", lenders={}))

    def first(**_: object) -> None: ...
    def second(**_: object) -> None: ...

    transitions.follow(name="x", follower=first)
    transitions.follow(name="x", follower=second)
    assert transitions.followers() == [second] and transitions.lent_names() == ["x"]
