"""The training Reporter (docs/agent.md) against the real app (live server): every sample of a
training loop arrives exactly once through an outage; the job found by its Slurm id; who
sends what by rank; 4xx dropped with one line; spill to disk and bounded memory; close at
interpreter exit."""

from __future__ import annotations

import datetime as dt
import logging
import math
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.services import agent_scope_set
from apps.jobs.models import Checkpoint, JobMetric, JobPhase, NodeStepMetric
from apps.jobs.services import job_create
from kuae_agent.report import Reporter
from tests.agent.proxy import FaultyProxy
from tests.support import closed_port

pytestmark = pytest.mark.django_db(transaction=True)

FAST = {"flush_every_s": 0.3, "batch_size": 40, "backoff_max_s": 0.4, "timeout_s": 1.0}


@pytest.fixture
def token(cluster) -> str:  # noqa: ANN001
    """A node agent's token, scoped to gpu000 (where the training job's rank 0 runs)."""
    user = user_create_or_update(username="trainer", role="agent")
    agent_scope_set(user=user, cluster="c1", hostlist="gpu000")
    return token_issue(user=user)


def steps_stored(job) -> list[int]:  # noqa: ANN001
    return list(JobMetric.objects.filter(job=job).order_by("ts").values_list("step", flat=True))


def wait_for(predicate, timeout_s: float = 20.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_every_sample_arrives_exactly_once_through_an_outage(live_server, job, token, tmp_path):
    """A training loop at 50 steps/s for 6 s; the server is unreachable for 4 s of it: 503s,
    answers lost after the server stored the batch, requests that hang past the client's
    timeout, connections closed unanswered. Every step's job-wide and per-node sample, and
    the checkpoint taken during the outage, are stored once — none lost, none twice."""
    proxy = FaultyProxy(live_server.url, hang_s=1.5)
    rep = Reporter(
        server=proxy.url,
        token=token,
        job_id=job.pk,
        node="gpu000",
        spool_dir=tmp_path / "spool",
        memory_bytes=4096,  # a small memory: batches spill to the disk spool in the outage
        env={},
        **FAST,
    )
    # up for 60 steps, then each fault for 50 steps and until a request has met it (on a
    # loaded machine a hung request and the retry's backoff can outlast a fixed window), then
    # up again until step 300
    faults = ["503", "lost", "hang", "refuse", "up"]
    since, step, slowest = 60, 0, 0.0
    while step < 300 or faults:
        assert step < 3000, proxy.seen
        if faults and step >= since and (proxy.mode == "up" or proxy.seen[proxy.mode]):
            proxy.mode, since = faults.pop(0), step + 50
        started = time.perf_counter()
        loss = 2.0 - min(step, 299) / 300
        rep.step(step, step_time_s=0.02, tokens_per_s=1e5, loss=loss, compute_s=0.015)
        if step == 150:
            rep.checkpoint(step, saved_at=time.time() - 2.5, blocking_s=2.5, size_bytes=10**9)
        slowest = max(slowest, time.perf_counter() - started)
        time.sleep(0.02)
        step += 1
    n = step
    assert rep.flush(20.0)
    rep.close()
    assert steps_stored(job) == list(range(n))  # each once, none missing
    assert NodeStepMetric.objects.filter(job=job, node__hostname="gpu000").count() == n
    assert NodeStepMetric.objects.filter(job=job, compute_s=0.015).count() == n
    assert list(Checkpoint.objects.filter(job=job).values_list("step", "blocking_s")) == [
        (150, 2.5)
    ]
    stats = rep.stats()
    assert stats.dropped == 0 and stats.rejected == 0 and stats.pending == 0
    assert stats.sent == 2 * n + 1 + 1 and stats.retries >= 4  # + the `startup` phase
    assert JobPhase.objects.filter(job=job, name="startup").count() == 1
    assert all(proxy.seen[m] for m in ("503", "lost", "hang", "refuse", "up")), proxy.seen
    assert proxy.forwarded_samples > 2 * n  # a lost answer's batch was sent again: stored once
    # the training thread never waited on the network: every wait there is 0.4 s or more
    # (the backoff, the 1 s timeout, the 1.5 s hang); a step is a queue append, under 50 ms
    # even on a loaded 2-core machine (a CI run saw 12 ms once)
    assert slowest < 0.05
    assert not list((tmp_path / "spool").glob("*.json"))  # the spill was delivered
    proxy.close()


def test_the_job_is_found_by_its_slurm_id(live_server, job, token, tmp_path, monkeypatch):
    job.external_id = "88412"
    job.save(update_fields=["external_id"])
    job_create(cluster=job.cluster, nodes=[], name="elsewhere", gpu_count=8, external_id="1")
    for name, value in {
        "KUAE_SERVER": live_server.url,
        "KUAE_TOKEN": token,
        "SLURM_JOB_ID": "88412",
        "KUAE_CLUSTER": "c1",
        "KUAE_NODE": "gpu000",
        "SLURM_PROCID": "0",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("KUAE_JOB_ID", "RANK", "LOCAL_RANK", "SLURM_LOCALID"):
        monkeypatch.delenv(name, raising=False)
    rep = Reporter(spool_dir=tmp_path, **FAST)
    for step in range(5):
        rep.step(step, step_time_s=1.0, tokens_per_s=10.0)
    assert rep.flush(10.0)
    rep.close()
    assert rep.job_id == job.pk and steps_stored(job) == list(range(5))


def test_token_from_a_file_and_arguments_override(live_server, job, token, tmp_path, monkeypatch):
    (tmp_path / "token").write_text(token + "\n")
    env = {"KUAE_SERVER": "http://127.0.0.1:1", "KUAE_TOKEN_FILE": str(tmp_path / "token")}
    env |= {"KUAE_JOB_ID": "999999", "RANK": "5", "LOCAL_RANK": "3"}
    rep = Reporter(
        server=live_server.url,
        job_id=job.pk,
        rank=0,
        local_rank=0,
        node="gpu000",
        env=env,
        spool_dir=tmp_path / "s",
        **FAST,
    )
    rep.step(1, step_time_s=1.0, tokens_per_s=1.0)
    assert rep.token == token and rep.flush(10.0)
    rep.close()
    assert steps_stored(job) == [1]


@pytest.mark.parametrize(
    ("env", "job_wide", "per_node"),
    [
        ({}, True, True),  # one process: both
        ({"RANK": "0", "LOCAL_RANK": "0"}, True, True),
        ({"RANK": "8", "LOCAL_RANK": "0"}, False, True),  # first local rank of another node
        ({"RANK": "3", "LOCAL_RANK": "3"}, False, False),  # sends nothing
        ({"SLURM_PROCID": "0", "SLURM_LOCALID": "0"}, True, True),
        ({"SLURM_PROCID": "9", "SLURM_LOCALID": "1"}, False, False),
        ({"RANK": "0", "SLURM_PROCID": "4", "LOCAL_RANK": "1"}, True, False),  # torchrun's wins
    ],
)
def test_ranks_decide_what_is_sent(env, job_wide, per_node, tmp_path):
    base = {"KUAE_SERVER": "http://127.0.0.1:1", "KUAE_TOKEN": "t", "KUAE_JOB_ID": "1"}
    rep = Reporter(env={**base, **env}, spool_dir=tmp_path, at_exit=False)
    assert (rep.job_wide, rep.per_node) == (job_wide, per_node)
    # A rank that sends no samples has no sender thread; every rank has its watchdog.
    assert (rep._thread is not None) == (job_wide or per_node)
    assert rep._watchdog is not None
    rep.step(1, step_time_s=1.0, tokens_per_s=1.0)  # and costs little
    rep.close(timeout_s=0)


def test_without_configuration_it_reports_nothing_and_never_raises(caplog, tmp_path):
    with caplog.at_level(logging.WARNING, logger="kuae_agent.report"):
        rep = Reporter(env={}, spool_dir=tmp_path)
    assert "KUAE_SERVER, KUAE_TOKEN, KUAE_JOB_ID" in caplog.text
    rep.step(1, step_time_s=1.0, tokens_per_s=1.0)
    rep.checkpoint(1, saved_at=0, blocking_s=1)
    assert rep.flush(0.1)
    rep.close()


def test_a_4xx_drops_the_batch_with_one_logged_line(live_server, job, token, caplog, tmp_path):
    """Job-wide samples for a job the token may not write for (403), then a bad batch
    (400: a node not registered): dropped, one line each, never retried; the rest goes on."""
    rep = Reporter(
        server=live_server.url,
        token=token,
        job_id=job.pk,
        node="gpu-unknown",
        env={},
        spool_dir=tmp_path,
        **FAST,
    )
    with caplog.at_level(logging.WARNING, logger="kuae_agent.report"):
        rep.step(1, step_time_s=1.0, tokens_per_s=1.0)
        assert rep.flush(10.0)
    rep.close()
    refused = [r for r in caplog.records if "refused" in r.getMessage()]
    # One line for the samples' batch, one for the `startup` phase's (it names the node too).
    assert len(refused) == 2 and all("HTTP 403" in r.getMessage() for r in refused)
    assert rep.stats().rejected == 2 + 1 and rep.stats().retries == 0
    assert steps_stored(job) == []


def test_bad_values_never_raise_and_are_counted(live_server, job, token, tmp_path):
    class Exploding:
        def __float__(self) -> float:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    rep = Reporter(
        server=live_server.url,
        token=token,
        job_id=job.pk,
        node="gpu000",
        per_node=False,
        env={},
        spool_dir=tmp_path,
        **FAST,
    )
    rep.step("not a step", step_time_s=1.0, tokens_per_s=1.0)  # type: ignore[arg-type]
    rep.step(1, step_time_s=math.nan, tokens_per_s=1.0)
    rep.step(2, step_time_s=1.0, tokens_per_s=-1.0)
    rep.step(3, step_time_s=1.0, tokens_per_s=1.0, loss=Exploding(), grad_norm=math.inf)
    rep.step(4, step_time_s=1.0, tokens_per_s=1.0, loss=math.nan)  # SDC evidence: kept
    rep.checkpoint(5, saved_at="yesterday", blocking_s=1)  # type: ignore[arg-type]
    assert rep.flush(10.0)
    rep.close()
    assert rep.stats().invalid == 3 and rep.stats().rejected == 0
    rows = {m.step: m for m in JobMetric.objects.filter(job=job)}
    assert sorted(rows) == [3, 4]
    assert rows[3].loss is None and rows[3].nonfinite == "grad_norm=Infinity"
    assert rows[4].nonfinite == "loss=NaN"


def test_server_down_spills_to_disk_bounded_then_delivers(live_server, job, token, tmp_path):
    """Down: batches past the memory bound go to the spool; past the spool's bound the oldest
    go and are counted. Back up: a new Reporter on the same spool delivers what is left."""
    down = f"http://127.0.0.1:{closed_port()}"
    spool = tmp_path / "spool"
    rep = Reporter(
        server=down,
        token=token,
        job_id=job.pk,
        node="gpu000",
        per_node=False,
        startup=False,  # samples only: what is dropped and kept is counted in samples
        env={},
        spool_dir=spool,
        memory_bytes=2_000,
        spool_bytes=12_000,
        **FAST,
    )
    for step in range(400):
        rep.step(step, step_time_s=0.1, tokens_per_s=1.0)
        if step % 40 == 0:
            time.sleep(0.35)  # let the sender cut batches
    assert not rep.flush(1.0)
    rep.close(timeout_s=0.5)
    stats = rep.stats()
    assert stats.dropped > 0 and stats.sent == 0
    assert stats.dropped + stats.pending == 400
    files = list(spool.glob("*.json"))
    assert files and sum(f.stat().st_size for f in files) <= 12_000 + 4_000
    again = Reporter(
        server=live_server.url,
        token=token,
        job_id=job.pk,
        node="gpu000",
        per_node=False,
        env={},
        spool_dir=spool,
        **FAST,
    )
    assert again.flush(10.0)
    again.close()
    stored = steps_stored(job)
    assert len(stored) == stats.pending and stored == list(range(400 - len(stored), 400))


def test_buffer_full_drops_the_oldest_and_counts(tmp_path):
    rep = Reporter(
        server="http://127.0.0.1:1",
        token="t",
        job_id=1,
        env={},
        buffer_size=100,
        spool_dir=tmp_path,
        at_exit=False,
        flush_every_s=3600,
        batch_size=10**6,
    )
    for step in range(250):
        rep.step(step, step_time_s=1.0, tokens_per_s=1.0)
    assert len(rep._buf) == 100 and rep._buf[0][1] == 150  # the oldest went
    assert rep.dropped == 300  # 150 steps' job-wide and per-node samples
    rep.close(timeout_s=0)


def test_close_runs_at_interpreter_exit(live_server, job, token, tmp_path):
    script = textwrap.dedent(
        """
        from kuae_agent.report import Reporter
        rep = Reporter(flush_every_s=3600)
        for step in range(20):
            rep.step(step, step_time_s=0.5, tokens_per_s=100.0)
        rep.checkpoint(19, saved_at=1.7e9, blocking_s=3.0)
        """
    )
    env = {
        **os.environ,
        "KUAE_SERVER": live_server.url,
        "KUAE_TOKEN": token,
        "KUAE_JOB_ID": str(job.pk),
        "KUAE_NODE": "gpu000",
        "KUAE_SPOOL_DIR": str(tmp_path),
    }
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=60)
    assert steps_stored(job) == list(range(20))
    assert NodeStepMetric.objects.filter(job=job).count() == 20
    assert Checkpoint.objects.filter(job=job, step=19).exists()
    assert not any(Path(tmp_path).rglob("*.json"))


def _proc_start() -> dt.datetime:
    """This process's start, read here from /proc (field 22 of /proc/self/stat)."""
    ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    boot = next(
        int(line.split()[1])
        for line in Path("/proc/stat").read_text().splitlines()
        if line.startswith("btime ")
    )
    return dt.datetime.fromtimestamp(boot + ticks / os.sysconf("SC_CLK_TCK"), tz=dt.UTC)


def test_phases_startup_restore_and_eval_are_posted(live_server, job, token, tmp_path):
    """`startup` with no call (process start to the first step), `restored()` and
    `phase()` / `phase_start()`…`phase_end()` arrive through the sender; ranks other than 0
    send none (docs/agent.md, Phases)."""
    other = Reporter(
        server=live_server.url, token=token, job_id=job.pk, node="gpu000", rank=3,
        local_rank=0, watchdog=False, spool_dir=tmp_path / "r3", **FAST,
    )  # fmt: skip
    rep = Reporter(
        server=live_server.url,
        token=token,
        job_id=job.pk,
        node="gpu000",
        rank=0,
        local_rank=0,
        spool_dir=tmp_path / "r0",
        **FAST,
    )  # fmt: skip  (its watchdog registers rank 0: the token may then send job-wide samples)
    for r in (rep, other):
        r.restored(0, load_s=1.0)  # a restore before the first step is no startup's end
    before = dt.datetime.now(dt.UTC)
    for r in (rep, other):
        r.step(1, step_time_s=0.1, tokens_per_s=10.0)
    after = dt.datetime.now(dt.UTC)
    rep.step(2, step_time_s=0.1, tokens_per_s=10.0)  # a second step ends nothing
    t0 = time.time()
    rep.restored(1200, load_s=2.5)
    t1 = time.time()
    with rep.phase("eval"):
        time.sleep(0.05)
    with pytest.raises(KeyError), rep.phase("data_wait"):
        raise KeyError("the block's own error goes on")
    rep.phase_start("eval_long")
    rep.phase_end("eval_long", step=1300)
    rep.phase_end("never_begun")  # ignored
    rep.restored("junk", load_s="junk")  # never raises
    for r in (other, rep):
        assert r.flush(10.0)
        r.close()
    rows = {p.name: p for p in JobPhase.objects.filter(job=job)}
    assert set(rows) == {"startup", "checkpoint_restore", "eval", "data_wait", "eval_long"}
    # Two restores: at step 0 (before training) and at step 1200; rank 3's none.
    restores = JobPhase.objects.filter(job=job, name="checkpoint_restore").order_by("step")
    assert [r.step for r in restores] == [0, 1200]
    startup = rows["startup"]
    assert abs((startup.start - _proc_start()).total_seconds()) < 0.02
    assert before <= startup.end <= after and startup.node.hostname == "gpu000"
    last = restores[1]
    assert last.end - last.start == dt.timedelta(seconds=2.5)
    assert t0 - 0.001 <= last.end.timestamp() <= t1 + 0.001
    assert rows["eval"].duration_s >= 0.05 and rows["eval"].step is None
    assert rows["eval_long"].step == 1300
    assert rep.stats().rejected == 0 and other.stats().sent == 1  # its step's node sample
