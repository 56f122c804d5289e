"""What operators see of Slurm: both states on the node page, what was sent, and a failing
sync on the overview (docs/slurm.md, The live sync: a failed sync is never silent)."""

from __future__ import annotations

from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.fleet.services import node_set_state
from apps.scheduler.models import SchedulerNode, SchedulerSync


def test_node_page_shows_slurm_state_and_what_was_sent(
    client, users, cluster: Cluster, nodes: list[Node]
) -> None:  # noqa: ANN001
    Cluster.objects.filter(pk=cluster.pk).update(slurm_kind="cli", actuation="on")
    SchedulerNode.objects.create(
        node=nodes[0], state="idle+drain", reason="kuae #1: xid (root)", synced_at=timezone.now()
    )
    change = node_set_state(
        node=nodes[0], state="drained", reason="gpu_errors: XID 79", source="check"
    )
    client.force_login(users["otto"])  # an operator: the set-state form says what it does
    page = client.get("/nodes/gpu000/").content.decode()
    assert "In Slurm" in page and "idle+drain" in page and "kuae #1: xid (root)" in page
    assert "Sent to Slurm" in page and f"kuae #{change.pk}: gpu_errors: XID 79" in page
    assert 'class="badge act-pending"' in page
    assert f'id="change-{change.pk}"' in page  # the number in the reason leads here
    assert "also drains it in Slurm" in page


def test_node_page_without_slurm_says_nothing_of_it(client, users, nodes: list[Node]) -> None:  # noqa: ANN001
    client.force_login(users["otto"])  # an operator: the set-state form says what it does
    page = client.get("/nodes/gpu000/").content.decode()
    assert "In Slurm" not in page and "Sent to Slurm" not in page
    assert "Slurm actuation is off" in page


def test_overview_shows_a_failing_sync(client, users, cluster: Cluster, nodes: list[Node]) -> None:  # noqa: ANN001
    SchedulerSync.objects.create(
        cluster=cluster,
        ok=False,
        failures=3,
        error="slurm cli: squeue --json: Unable to contact slurm controller",
        last_ok_at=timezone.now(),
    )
    client.force_login(users["mia"])
    page = client.get("/?cluster=c1").content.decode()
    assert "Slurm sync failing" in page and "3 failed syncs in a row" in page
    assert "Unable to contact slurm controller" in page
    SchedulerSync.objects.filter(cluster=cluster).update(ok=True, failures=0, error="")
    page = client.get("/?cluster=c1").content.decode()
    assert "Slurm sync failing" not in page and "Slurm synced" in page


def test_draining_a_node_with_a_job_asks_first(client, users, job, nodes: list[Node]) -> None:  # noqa: ANN001
    client.force_login(users["otto"])
    r = client.post("/nodes/gpu001/state/", {"state": "drained", "reason": "fan noise"})
    page = r.content.decode()
    assert r.status_code == 200 and "A running job is on this node" in page
    assert "llama-70b" in page and "32 GPUs" in page and 'name="confirm" value="1"' in page
    # actuation is off: the confirmation says what happens, never that the job stops
    assert "stop the job" not in page and "This stops" not in page
    assert "Slurm is not told" in page and "Slurm actuation is off for c1" in page
    assert "llama-70b (32 GPUs) keeps running on it" in page
    assert 'class="danger">Yes, drain gpu001 in KUAE only</button>' in page
    assert Node.objects.get(hostname="gpu001").state == "healthy"  # nothing done yet
    r = client.post(
        "/nodes/gpu001/state/", {"state": "drained", "reason": "fan noise", "confirm": "1"}
    )
    assert r.status_code == 302 and Node.objects.get(hostname="gpu001").state == "drained"
    # a node without a job, or a return to healthy, needs no confirmation
    assert (
        client.post("/nodes/gpu007/state/", {"state": "drained", "reason": "x"}).status_code == 302
    )
    assert (
        client.post("/nodes/gpu001/state/", {"state": "healthy", "reason": "ok"}).status_code == 302
    )


def test_drain_confirmation_with_actuation_on_says_slurm_drains_it(
    client, users, job, cluster: Cluster, nodes: list[Node]
) -> None:  # noqa: ANN001
    Cluster.objects.filter(pk=cluster.pk).update(slurm_kind="cli", actuation="on")
    client.force_login(users["otto"])
    page = client.post("/nodes/gpu001/state/", {"state": "drained", "reason": "fan"}).content
    page = page.decode()
    assert "Slurm is asked to drain it" in page and "Slurm is not told" not in page
    assert "llama-70b (32 GPUs) keeps running until it ends" in page
    assert 'class="danger">Yes, drain gpu001 in KUAE and Slurm</button>' in page
    Cluster.objects.filter(pk=cluster.pk).update(automation_paused=True, automation_by="ann")
    page = client.post("/nodes/gpu001/state/", {"state": "down", "reason": "fan"}).content
    page = page.decode()
    assert "Slurm is not told" in page and "automation is paused on c1 by ann" in page
    assert 'KUAE marks <span class="mono">gpu001</span> down' in page
    assert 'class="danger">Yes, mark down gpu001 in KUAE only</button>' in page
