"""The actuation outbox (docs/slurm.md, Actuation): which state changes ask the scheduler for what,
and the API that shows them and sets a cluster's connection."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import transaction
from django.utils import timezone

from apps.fleet import transitions
from apps.fleet.models import Cluster, Node, NodeStateChange
from apps.fleet.services import node_set_state
from apps.scheduler.models import Actuation
from apps.scheduler.services.actuation import actuation_request


def _mode(cluster: Cluster, actuation: str) -> None:
    Cluster.objects.filter(pk=cluster.pk).update(actuation=actuation)


def test_off_by_default_nothing_is_queued(cluster: Cluster, nodes: list[Node]) -> None:
    assert cluster.actuation == "off"
    node_set_state(node=nodes[0], state="drained", reason="xid", source="check")
    assert not Actuation.objects.exists()


def test_drain_then_return_queue_a_drain_and_a_resume(cluster: Cluster, nodes: list[Node]) -> None:
    _mode(cluster, "on")
    change = node_set_state(
        node=nodes[0], state="drained", reason="gpu_errors: XID 79 on GPU 3", source="check"
    )
    node_set_state(node=nodes[0], state="down", reason="worse", source="check")  # still out
    node_set_state(node=nodes[0], state="healthy", reason="repaired", source="user", by="otto")
    drain, resume = Actuation.objects.order_by("id")
    assert (drain.action, drain.result, drain.state_change_id) == ("drain", "pending", change.pk)
    assert drain.reason == f"kuae #{change.pk}: gpu_errors: XID 79 on GPU 3"
    assert resume.action == "resume" and resume.result == "pending"


def test_reason_is_short_and_quote_free(cluster: Cluster, nodes: list[Node]) -> None:
    _mode(cluster, "on")
    node_set_state(node=nodes[0], state="drained", reason='say "hi"\n' + "x" * 500, source="check")
    (row,) = Actuation.objects.all()
    assert len(row.reason) <= 120 and '"' not in row.reason and "\n" not in row.reason


def test_dry_run_records_without_sending(cluster: Cluster, nodes: list[Node]) -> None:
    _mode(cluster, "dry_run")
    node_set_state(node=nodes[0], state="drained", reason="xid", source="check")
    (row,) = Actuation.objects.all()
    assert row.result == "skipped" and "dry run" in row.error and row.sent_at is None


def test_a_drain_mirrored_from_slurm_is_not_sent_back(cluster: Cluster, nodes: list[Node]) -> None:
    _mode(cluster, "on")
    node_set_state(node=nodes[0], state="drained", reason="Slurm: bad fan", source="slurm")
    assert not Actuation.objects.exists()


def test_a_back_filled_change_sends_nothing(cluster: Cluster, nodes: list[Node]) -> None:
    _mode(cluster, "on")
    node_set_state(
        node=nodes[0], state="drained", reason="last week", at=timezone.now() - dt.timedelta(days=7)
    )
    node_set_state(
        node=nodes[0], state="healthy", reason="back", at=timezone.now() - dt.timedelta(days=6)
    )
    assert Actuation.objects.count() == 2  # each was the newest when written
    Actuation.objects.all().delete()
    node_set_state(
        node=nodes[0], state="down", reason="history only", at=timezone.now() - dt.timedelta(days=8)
    )
    assert not Actuation.objects.exists()


def test_the_scheduler_lends_its_outbox_to_the_fleet_at_start_up() -> None:
    """The fleet's state change knows no scheduler: the outbox writer is lent to it from
    `SchedulerConfig.ready()`, once however often ready() runs."""
    assert transitions.lent_names().count("scheduler.actuation") == 1
    assert actuation_request in transitions.followers()


def test_the_request_commits_and_rolls_back_with_its_state_change(
    cluster: Cluster, nodes: list[Node], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never lost, never sent for a change that did not happen: the outbox row is written in
    the state change's transaction. A failure after it (here a second follower that fails)
    takes both back; a transaction that commits keeps both."""
    _mode(cluster, "on")

    def failing(**_: object) -> None:
        assert Actuation.objects.filter(node=nodes[0]).exists()  # already written, uncommitted
        raise RuntimeError("after the outbox write")

    monkeypatch.setitem(transitions._lent, "test.failing", failing)
    with pytest.raises(RuntimeError):
        node_set_state(node=nodes[0], state="drained", reason="xid", source="check")
    assert not Actuation.objects.exists()
    assert not NodeStateChange.objects.filter(node=nodes[0], state="drained").exists()
    monkeypatch.delitem(transitions._lent, "test.failing")
    with pytest.raises(ZeroDivisionError), transaction.atomic():  # the caller's transaction
        node_set_state(node=nodes[0], state="drained", reason="xid", source="check")
        1 / 0  # noqa: B018
    assert not Actuation.objects.exists()
    change = node_set_state(node=nodes[0], state="drained", reason="xid", source="check")
    assert Actuation.objects.get().state_change_id == change.pk


def test_suspect_is_not_an_actuation(cluster: Cluster, nodes: list[Node]) -> None:
    _mode(cluster, "on")
    node_set_state(node=nodes[0], state="suspect", reason="slow", source="check")
    assert not Actuation.objects.exists()


def test_actuations_api_lists_and_filters(api, cluster: Cluster, nodes: list[Node]) -> None:  # noqa: ANN001
    _mode(cluster, "on")
    node_set_state(node=nodes[0], state="drained", reason="xid", source="check")
    node_set_state(node=nodes[1], state="down", reason="gone", source="check")
    body = api("mia").get("/api/v1/actuations/", {"cluster": "c1", "node": "gpu001"}).json()
    assert body["count"] == 1
    (row,) = body["results"]
    assert row["node"] == "gpu001" and row["action"] == "drain" and row["result"] == "pending"
    assert set(row) >= {"node", "action", "reason", "requested_at", "sent_at", "result", "error"}
    assert api("ada").get("/api/v1/actuations/").status_code == 403  # agents never read


def test_patch_cluster_sets_slurm_and_actuation(api, cluster: Cluster) -> None:  # noqa: ANN001
    root = api("root")
    r = root.patch(
        "/api/v1/clusters/c1/",
        {"slurm": {"mode": "rest", "url": "unix:/run/slurmrestd.sock"}, "actuation": "dry_run"},
        format="json",
    )
    assert r.status_code == 200, r.content
    assert r.json()["slurm"] == {"mode": "rest", "url": "unix:/run/slurmrestd.sock"}
    assert r.json()["actuation"] == "dry_run"
    cluster.refresh_from_db()
    assert (cluster.slurm_kind, cluster.actuation) == ("rest", "dry_run")
    r = root.patch("/api/v1/clusters/c1/", {"slurm": None}, format="json")
    assert r.status_code == 200 and r.json()["slurm"] is None
    assert api("mia").get("/api/v1/clusters/c1/").json()["actuation"] == "dry_run"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"slurm": {"mode": "rest"}}, "url"),
        ({"slurm": {"mode": "rest", "url": "ftp://x"}}, "url"),
        ({"slurm": {"mode": "cli", "url": "relative/slurm.conf"}}, "url"),
        ({"slurm": {"mode": "k8s"}}, "mode"),
        ({"slurm": {"mode": "rest", "url": "http://s:6820", "token": "eyJ"}}, "token"),
        ({"slurm": "cli"}, "slurm"),
        ({"actuation": "sometimes"}, "actuation"),
    ],
)
def test_patch_cluster_names_the_bad_field(api, cluster: Cluster, body: dict, field: str) -> None:  # noqa: ANN001
    r = api("root").patch("/api/v1/clusters/c1/", body, format="json")
    assert r.status_code == 400
    assert field in str(r.json())
    cluster.refresh_from_db()
    assert cluster.slurm_kind == "" and cluster.actuation == "off"


def test_only_admins_patch_clusters(api, cluster: Cluster) -> None:  # noqa: ANN001
    r = api("erin").patch("/api/v1/clusters/c1/", {"actuation": "on"}, format="json")
    assert r.status_code == 403
    assert api("root").put("/api/v1/clusters/c1/", {}, format="json").status_code in (403, 405)


def test_first_sync_registers_nodes_and_mirrors_their_drains(cluster: Cluster) -> None:
    """A node Slurm has drained that KUAE has never seen: registered and drained in one sync
    (its time in service starts at the sync, so the drain is not 'before in_service_at')."""
    from apps.scheduler.services import nodes_mirror
    from apps.scheduler.slurm_nodes import parse_nodes

    listing = {
        "nodes": [
            {
                "name": "new01",
                "state": "idle",
                "state_flags": ["DRAIN"],
                "reason": "bad PSU",
                "reason_set_by_user": "alice",
                "gres": "gpu:8",
            },
            {"name": "new02", "state": "idle", "state_flags": [], "reason": "", "gres": "gpu:4"},
        ]
    }
    counts = nodes_mirror(cluster=cluster, nodes=parse_nodes(listing), now=timezone.now())
    assert counts == {"nodes": 2, "nodes_new": 2, "nodes_mirrored": 1}
    drained = Node.objects.get(hostname="new01")
    assert drained.state == "drained" and "bad PSU" in drained.state_reason
    assert Node.objects.get(hostname="new02").gpu_count == 4
    again = nodes_mirror(cluster=cluster, nodes=parse_nodes(listing), now=timezone.now())
    assert again["nodes_mirrored"] == 0  # the same Slurm drain is mirrored once


def test_slurms_view_of_each_node_is_kept_once_per_node(
    cluster: Cluster, nodes: list[Node]
) -> None:
    """`sinfo -N --json` of 23.x lists a node once per partition: its state is kept once (one
    SchedulerNode, keyed by the node), and the next sync replaces it."""
    from apps.scheduler.models import SchedulerNode
    from apps.scheduler.services import nodes_mirror
    from apps.scheduler.slurm_nodes import parse_nodes

    def listing(state: list[str], reason: str) -> dict:
        entry = {"nodes": {"nodes": ["gpu000"]}, "node": {"state": state}, "reason": reason}
        return {"sinfo": [entry, {**entry, "partition": {"name": "debug"}}]}

    first = timezone.now()
    nodes_mirror(cluster=cluster, nodes=parse_nodes(listing(["IDLE"], "")), now=first)
    (row,) = SchedulerNode.objects.all()
    assert (row.node_id, row.state, row.reason, row.synced_at) == (nodes[0].pk, "idle", "", first)
    later = first + dt.timedelta(seconds=30)
    nodes_mirror(cluster=cluster, nodes=parse_nodes(listing(["IDLE", "DRAIN"], "fan")), now=later)
    (row,) = SchedulerNode.objects.all()
    assert (row.state, row.reason, row.synced_at) == ("idle+drain", "fan", later)


def test_a_later_request_waits_for_an_earlier_one_still_backing_off(
    cluster: Cluster, nodes: list[Node]
) -> None:
    """Drain asked while Slurm was away (pending, backing off), then the node returned: the
    resume must not go out before the drain, or Slurm would end drained while KUAE says
    healthy. Claims follow each node's order."""
    from apps.scheduler.services import actuations_claim

    _mode(cluster, "on")
    node_set_state(node=nodes[0], state="drained", reason="xid", source="check")
    node_set_state(node=nodes[0], state="healthy", reason="back", source="user", by="otto")
    node_set_state(node=nodes[1], state="drained", reason="xid", source="check")
    drain0, resume0, drain1 = Actuation.objects.order_by("id")
    Actuation.objects.filter(pk=drain0.pk).update(
        next_try_at=timezone.now() + dt.timedelta(minutes=3)  # its backoff
    )
    assert actuations_claim() == [drain1.pk]  # gpu000's resume waits behind its drain
    Actuation.objects.filter(pk__in=[drain0.pk, drain1.pk]).update(next_try_at=timezone.now())
    Actuation.objects.filter(pk=drain1.pk).update(result="done")
    assert actuations_claim() == [drain0.pk, resume0.pk]  # in order, in one round
