"""KUAE and a real Slurm 22.05, both ways (docs/slurm.md): jobs and node states come in by
the live sync, KUAE's drains and returns reach `sinfo`, a drain asked while slurmctld is
down arrives when it is back, and a person's drain in Slurm is mirrored and left alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.fleet.services import cluster_create, node_set_state
from apps.jobs.models import Job
from apps.scheduler.models import Actuation, SchedulerSync
from apps.scheduler.services import actuations_deliver, cluster_sync
from tests.scheduler.slurmlab import SlurmLab, lab_down, lab_up, slurm_or_skip


@pytest.fixture(scope="module")
def lab() -> Iterator[SlurmLab]:
    slurm_or_skip()
    running = lab_up()
    yield running
    lab_down(running)


@pytest.fixture
def rclab(db, lab: SlurmLab) -> Cluster:  # noqa: ANN001
    """The lab's cluster in KUAE, synced over the client commands, actuation on."""
    cluster = cluster_create(
        name="rclab", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8
    )
    Cluster.objects.filter(pk=cluster.pk).update(
        slurm_kind="cli", slurm_url=lab.conf, actuation="on"
    )
    cluster.refresh_from_db()
    yield cluster
    for name in ("rcgpu01", "rcgpu02"):  # leave the lab as found for the next test
        lab.run("scontrol", "update", f"NodeName={name}", "State=RESUME", check=False)
    lab.run("scancel", "--full", "-u", "root", check=False)


def _sync(cluster: Cluster) -> SchedulerSync:
    report = cluster_sync(cluster=cluster)
    assert report.ok, report.error
    return SchedulerSync.objects.get(cluster=cluster)


def test_jobs_and_nodes_arrive_by_the_sync(lab: SlurmLab, rclab: Cluster) -> None:
    job_id = lab.submit("-N1", "--gres=gpu:2", "-J", "pretrain-7b", "--wrap", "sleep 60")
    lab.wait(lambda: "RUNNING" in lab.run("squeue", "-h", "-j", job_id, "-o", "%T"))
    status = _sync(rclab)
    nodes = {n.hostname: n for n in Node.objects.filter(cluster=rclab)}
    assert set(nodes) == {"rcgpu01", "rcgpu02"}  # registered from Slurm's node list
    assert all(n.gpu_count == 8 for n in nodes.values())
    job = Job.objects.get(cluster=rclab, external_id=job_id)
    assert job.status == "running" and job.name == "pretrain-7b"
    assert job.gpu_count == 2
    assert [n.hostname for n in job.nodes.all()] == [
        lab.run("squeue", "-h", "-j", job_id, "-o", "%N").strip()
    ]
    assert status.ok and status.counts["nodes"] == 2
    busy = nodes[job.nodes.get().hostname]
    assert busy.sched.state in ("mixed", "allocated") and busy.sched.synced_at is not None

    lab.run("scancel", job_id)
    lab.wait(lambda: "CANCELLED" in lab.run("sacct", "-n", "-X", "-j", job_id, "-o", "State"), 20)
    _sync(rclab)
    job.refresh_from_db()
    assert job.status == "cancelled" and job.ended_at is not None


def test_a_kuae_drain_reaches_sinfo_and_a_return_resumes(lab: SlurmLab, rclab: Cluster) -> None:
    _sync(rclab)
    node = Node.objects.get(hostname="rcgpu01")
    change = node_set_state(
        node=node, state="drained", reason="gpu_errors: XID 79 on GPU 3", source="check"
    )
    assert actuations_deliver(cluster=rclab) == {"done": 1}
    state, reason = lab.node("rcgpu01")
    assert state == "drained" and reason == f"kuae #{change.pk}: gpu_errors: XID 79 on GPU 3"
    row = Actuation.objects.get(node=node, action="drain")
    assert row.result == "done" and row.sent_at is not None

    node_set_state(node=node, state="healthy", reason="repaired", source="user", by="otto")
    assert actuations_deliver(cluster=rclab) == {"done": 1}
    assert lab.node("rcgpu01")[0] == "idle"


def test_a_drain_set_in_slurm_shows_in_kuae_and_is_left_alone(
    lab: SlurmLab, rclab: Cluster
) -> None:
    _sync(rclab)
    lab.run("scontrol", "update", "NodeName=rcgpu02", "State=DRAIN", "Reason=bad fan, ticket 4411")
    _sync(rclab)
    node = Node.objects.get(hostname="rcgpu02")
    assert node.state == "drained"
    assert "bad fan, ticket 4411" in node.state_reason
    change = node.state_changes.first()
    assert change.source == "slurm" and change.by == "slurm:root"
    assert node.sched.state == "idle+drain" and node.sched.reason.startswith("bad fan")
    assert not Actuation.objects.filter(node=node).exists()  # a mirror is not sent back

    node_set_state(node=node, state="healthy", reason="looks fine", source="user", by="otto")
    assert actuations_deliver(cluster=rclab) == {"skipped": 1}
    row = Actuation.objects.get(node=node)
    assert "left alone" in row.error and "bad fan" in row.error
    assert lab.node("rcgpu02") == ("drained", "bad fan, ticket 4411")  # the person's drain stays

    _sync(rclab)  # and the next sync does not take the node out again: it was returned
    node.refresh_from_db()
    assert node.state == "healthy"


def test_a_drain_while_slurmctld_is_down_arrives_when_it_is_back(
    lab: SlurmLab, rclab: Cluster
) -> None:
    _sync(rclab)
    lab.stop_controller()
    try:
        failed = cluster_sync(cluster=rclab)
        assert not failed.ok and "Slurmctld(primary) at" in failed.error and "DOWN" in failed.error
        status = SchedulerSync.objects.get(cluster=rclab)
        assert status.ok is False and status.failures == 1 and status.error

        node = Node.objects.get(hostname="rcgpu01")
        node_set_state(node=node, state="down", reason="heartbeat: silent 300 s", source="check")
        assert actuations_deliver(cluster=rclab) == {"pending": 1}
        row = Actuation.objects.get(node=node)
        assert row.result == "pending" and row.attempts == 1 and "is DOWN" in row.error
        assert row.next_try_at > timezone.now()
    finally:
        lab.start_controller()
    Actuation.objects.filter(pk=row.pk).update(next_try_at=timezone.now())  # its backoff is up
    assert actuations_deliver(cluster=rclab) == {"done": 1}
    assert lab.node("rcgpu01")[0] == "drained"
    assert _sync(rclab).failures == 0


def test_dry_run_sends_nothing(lab: SlurmLab, rclab: Cluster) -> None:
    # A controller restarted by an earlier test holds its nodes `unknown` until their
    # slurmd registers again (slow on a loaded machine): start from an idle node.
    lab.wait(lambda: lab.node("rcgpu01")[0] == "idle", 60)
    Cluster.objects.filter(pk=rclab.pk).update(actuation="dry_run")
    _sync(rclab)
    node_set_state(
        node=Node.objects.get(hostname="rcgpu01"), state="drained", reason="xid", source="check"
    )
    assert actuations_deliver(cluster=rclab) == {}
    assert Actuation.objects.get().result == "skipped"
    assert lab.node("rcgpu01")[0] == "idle"


def test_rest_reads_the_same_and_says_22_05_cannot_drain(lab: SlurmLab, rclab: Cluster) -> None:
    Cluster.objects.filter(pk=rclab.pk).update(slurm_kind="rest", slurm_url=lab.rest_url)
    rclab.refresh_from_db()
    job_id = lab.submit("-N1", "--gres=gpu:1", "--wrap", "sleep 60")
    lab.wait(lambda: "RUNNING" in lab.run("squeue", "-h", "-j", job_id, "-o", "%T"))
    status = _sync(rclab)
    assert status.counts["nodes"] == 2
    job = Job.objects.get(cluster=rclab, external_id=job_id)
    assert job.status == "running" and job.gpu_count == 1

    node_set_state(
        node=Node.objects.get(hostname="rcgpu02"), state="drained", reason="x", source="check"
    )
    assert actuations_deliver(cluster=rclab) == {"failed": 1}
    assert "offers no POST /slurm/v…/node/{node}" in Actuation.objects.get().error
    assert lab.node("rcgpu02")[0] != "drained"
