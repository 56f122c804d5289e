"""A real torch.distributed job (gloo, on the CPU: four rank processes on two nodes' worth of
KUAE_NODE) hung each way, its ranks' Reporters reporting to the live app, then judged by the
real `job_hang` check (docs/checks.md, Ranks): the culprit's node named with the right
words, no node named without evidence, and nothing opened for a pause that resumes.

The ranks' watchdogs use a 1-second stall window so reports arrive at once; the server keeps
its own (60 s minimum), so the check is run at a time ahead of the clock by as much as a
real hang would have lasted."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.utils import timezone

from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.models import Cluster, Node
from apps.fleet.services import NodeSpec, nodes_register
from apps.health.services import run_execute, runs_request
from apps.incidents.models import Incident
from apps.jobs.choices import JobStatus
from apps.jobs.models import Job, Rank
from tests.binaries import module_or_skip
from tests.support import closed_port

module_or_skip("torch.distributed", install="make install (the dev lock's torch, CPU build)")
pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("gloo_train.py")
WORLD = 4
HOSTS = ("gpu-h1", "gpu-h2")  # ranks 0, 1 on the first; 2, 3 on the second


def _host(rank: int) -> str:
    return HOSTS[rank * len(HOSTS) // WORLD]


@pytest.fixture
def hung_job(cluster: Cluster) -> Job:
    nodes_register(cluster=cluster, specs=[NodeSpec(hostname=h) for h in HOSTS])
    job = Job.objects.create(
        cluster=cluster,
        name="llm-gloo",
        gpu_count=WORLD,
        status=JobStatus.RUNNING,
        started_at=timezone.now() - dt.timedelta(minutes=5),
    )
    job.nodes.set(Node.objects.filter(hostname__in=HOSTS))
    return job


@pytest.fixture
def launch(live_server, hung_job: Job) -> Iterator[object]:  # noqa: ANN001
    token = token_issue(user=user_create_or_update(username="agent-gloo", role="agent"))
    procs = RUNNING
    procs.clear()

    def start(
        scenario: str, *args: str, env_over: dict[str, str] | None = None
    ) -> list[subprocess.Popen[bytes]]:
        port = closed_port()
        for rank in range(WORLD):
            env = {
                **os.environ,
                "RANK": str(rank),
                "WORLD_SIZE": str(WORLD),
                "LOCAL_RANK": str(rank % (WORLD // len(HOSTS))),
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port),
                "KUAE_SERVER": live_server.url,
                "KUAE_TOKEN": token,
                "KUAE_JOB_ID": str(hung_job.pk),
                "KUAE_NODE": _host(rank),
                "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'agent'}",
                "OMP_NUM_THREADS": "1",
                **(env_over or {}),
            }
            env = {k: v for k, v in env.items() if v}  # "" in env_over: not set at all
            procs.append(
                subprocess.Popen([sys.executable, str(SCRIPT), scenario, *args], env=env, cwd=ROOT)
            )
        return procs

    start.token = token  # type: ignore[attr-defined]
    yield start
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.kill()
        p.wait(timeout=30)


RUNNING: list[subprocess.Popen[bytes]] = []  # this test's rank processes


def _until(what: str, ok, timeout_s: float = 90.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while not ok():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        if any(p.poll() not in (None, 0) for p in RUNNING):
            pytest.fail(f"a rank process failed while waiting for {what}")
        time.sleep(0.2)


def _stalled(job: Job) -> int:
    return Rank.objects.filter(job=job, report_at__isnull=False, resumed_at__isnull=True).count()


def _judge(job: Job, ahead_s: float) -> Incident | None:
    """Run job_hang as the scheduler would, `ahead_s` after now; the job's hang incident."""
    run = runs_request(cluster=job.cluster, kinds=["job_hang"], requested_by="test")[0]
    run_execute(run_id=run.pk, now=timezone.now() + dt.timedelta(seconds=ahead_s))
    return Incident.objects.filter(job=job, category="hang").first()


def _timeline(incident: Incident) -> str:
    return "\n".join(incident.timeline.values_list("text", flat=True))


def test_a_rank_stuck_outside_the_collective_is_named_with_its_node(launch, hung_job):
    launch("outside")
    _until("every rank's stall report", lambda: _stalled(hung_job) == WORLD)
    incident = _judge(hung_job, ahead_s=130)
    assert incident is not None and incident.severity == "sev1"
    assert [n.hostname for n in incident.nodes.all()] == [_host(WORLD - 1)]
    assert incident.localized_at is not None
    said = _timeline(incident)
    assert f"rank {WORLD - 1} on {_host(WORLD - 1)}" in said
    assert "load_batch" in said and "all_reduce" in said


def test_a_frozen_rank_goes_silent_and_its_node_is_named(launch, hung_job):
    procs = launch("frozen")
    _until("step 20", lambda: (Job.objects.get(pk=hung_job.pk).progress_step or 0) >= 20)
    procs[WORLD - 1].send_signal(signal.SIGSTOP)
    _until("the other ranks' stall reports", lambda: _stalled(hung_job) == WORLD - 1)
    incident = _judge(hung_job, ahead_s=130)
    assert incident is not None
    assert [n.hostname for n in incident.nodes.all()] == [_host(WORLD - 1)]
    said = _timeline(incident)
    assert f"rank {WORLD - 1} on {_host(WORLD - 1)}" in said and "silent" in said


def test_every_rank_waiting_alike_names_no_node_without_evidence(launch, hung_job):
    launch("everyone")
    _until("every rank's stall report", lambda: _stalled(hung_job) == WORLD)
    incident = _judge(hung_job, ahead_s=130)
    assert incident is not None
    assert list(incident.nodes.all()) == []
    assert incident.localized_at is None
    said = _timeline(incident) + incident.description
    assert "no minority" in said and "none is named" in said


def test_a_pause_that_resumes_opens_nothing(launch, hung_job):
    procs = launch("pause")
    _until("every rank's stall report", lambda: _stalled(hung_job) == WORLD)
    assert _judge(hung_job, ahead_s=0) is None  # stalled, but not for the window yet
    for p in procs:
        assert p.wait(timeout=60) == 0
    assert Rank.objects.filter(job=hung_job, resumed_at__isnull=False).count() == WORLD
    assert _judge(hung_job, ahead_s=130) is None


def test_kuae_agent_stacks_localises_a_job_without_the_reporter(
    launch, hung_job, live_server, tmp_path
):
    """No Reporter: the ranks carry only their Slurm id; `kuae-agent stacks` on the node reads
    them with py-spy and posts what a watchdog would."""
    if shutil.which("py-spy", path=str(Path(sys.executable).parent)) is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs py-spy (the dev lock installs it)")
        pytest.skip("no py-spy beside this Python")
    hung_job.external_id = f"9{hung_job.pk:06d}"
    hung_job.save(update_fields=["external_id"])
    bare = {"KUAE_JOB_ID": "", "KUAE_SERVER": "", "KUAE_TOKEN": ""}
    launch("outside-bare", str(tmp_path), env_over={**bare, "SLURM_JOB_ID": hung_job.external_id})
    _until("every rank at the hang", lambda: len(list(tmp_path.iterdir())) == WORLD)
    time.sleep(2.0)  # the others into all_reduce
    done = subprocess.run(
        [sys.executable, "-m", "kuae_agent.cli", "stacks", "--job", str(hung_job.pk)]
        + ["--cluster", hung_job.cluster.name],
        env={
            **os.environ,
            "KUAE_SERVER": live_server.url,
            "KUAE_TOKEN": launch.token,
            "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'agent'}",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "4 stall report(s) sent" in done.stdout
    assert _stalled(hung_job) == WORLD
    incident = _judge(hung_job, ahead_s=130)
    assert incident is not None and incident.severity == "sev1"
    assert [n.hostname for n in incident.nodes.all()] == [_host(WORLD - 1)]
    said = _timeline(incident)
    assert f"rank {WORLD - 1} on {_host(WORLD - 1)}" in said and "load_batch" in said
