"""AgentScope moved from accounts to the fleet (migrations accounts.0004 and fleet.0014):
the table is renamed, not rebuilt, so every agent's scope keeps its row, its id and its
user, and the id counter goes on where it was. Migrated back before the move, rows written
there, forward, and back again: on PostgreSQL (DATABASE_URL), where production keeps its
scopes, and on the embedded default's SQLite, which `make run` sites keep theirs in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from apps.fleet.models import AgentScope, describe_scope
from tests.migrations_support import migrate, moved_back, tables

pytestmark = pytest.mark.django_db(transaction=True)  # migrations run their own transactions

BEFORE = [("accounts", "0003_agent_scope"), ("fleet", "0013_rollup_partitions")]
AFTER = [("accounts", "0004_agentscope_to_fleet"), ("fleet", "0014_agentscope_from_accounts")]


def scopes(model: Any) -> list[tuple[int, int, int, str, list[str]]]:
    """Every scope as (id, user id, cluster id, hostlist, hostnames), by id."""
    return list(
        model.objects.order_by("id").values_list(
            "id", "user_id", "cluster_id", "hostlist", "hostnames"
        )
    )


@pytest.fixture
def before_the_move() -> Iterator[Any]:
    """The database as it was before the move (its models); afterwards, every app's latest
    migration again, whatever the test did."""
    yield from moved_back(BEFORE)


def test_the_scopes_keep_their_rows_and_ids_across_the_move_and_back(before_the_move: Any):
    old = before_the_move
    assert "accounts_agentscope" in tables() and "fleet_agentscope" not in tables()
    User, Cluster = old.get_model("accounts", "User"), old.get_model("fleet", "Cluster")
    c1 = Cluster.objects.create(name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4)
    c2 = Cluster.objects.create(name="c2", gpu_model="H100", peak_tflops_per_gpu=989.4)
    OldScope = old.get_model("accounts", "AgentScope")
    for i, (cluster, hostlist, hostnames) in enumerate(
        [
            (c1, "gpu[000-001]", ["gpu000", "gpu001"]),
            (c1, "", []),
            (c2, "x000", ["x000"]),
        ]
    ):
        user = User.objects.create(username=f"agent-{i}", role="agent")
        OldScope.objects.create(user=user, cluster=cluster, hostlist=hostlist, hostnames=hostnames)
    OldScope.objects.filter(user__username="agent-1").delete()  # a gap the ids keep
    written = scopes(OldScope)
    assert [row[0] for row in written] == [written[0][0], written[0][0] + 2]

    ContentType = old.get_model("contenttypes", "ContentType")
    (kind,) = ContentType.objects.filter(model="agentscope").values_list("pk", "app_label")
    assert kind[1] == "accounts"  # its permissions and admin log entries point at this row

    new = migrate(AFTER)
    assert list(ContentType.objects.filter(model="agentscope").values_list("pk", "app_label")) == [
        (kind[0], "fleet")
    ]
    assert "fleet_agentscope" in tables() and "accounts_agentscope" not in tables()
    assert scopes(new.get_model("fleet", "AgentScope")) == written
    # Today's model reads them, and a new scope's id comes after the old ones.
    # (Only the columns the move is about: a cluster column added after 0014 is not there yet.)
    first = (
        AgentScope.objects.select_related("cluster")
        .only("hostlist", "cluster__name")
        .get(pk=written[0][0])
    )
    assert describe_scope(first) == "cluster c1, nodes gpu[000-001]"
    user = new.get_model("accounts", "User").objects.create(username="agent-3", role="agent")
    added = AgentScope.objects.create(user_id=user.pk, cluster_id=c2.pk, hostlist="x001")
    assert added.pk > written[-1][0] and added.hostnames == ["x001"]

    back = migrate(BEFORE)
    assert "accounts_agentscope" in tables() and "fleet_agentscope" not in tables()
    restored = scopes(back.get_model("accounts", "AgentScope"))
    assert restored == [*written, (added.pk, user.pk, c2.pk, "x001", ["x001"])]
