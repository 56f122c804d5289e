"""`kuae-agent stacks` (kuae_agent/stacks.py, docs/agent.md): real py-spy on real Python
processes that stand for a job's ranks — found by their environment, a wrapper carrying
SLURM_PROCID alone passed over, each one's main-thread stack posted innermost last — against
the in-process HTTP server of tests/agent/recorder.py. And the refusal: py-spy run as an
unprivileged user cannot ptrace a root process, and the command says how to allow it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kuae_agent import stacks
from tests.agent.recorder import Recorder

JOB = 9_000_041  # far from the ids of the jobs other tests run at the same time
SLURM = "770041"


def _py_spy() -> str:
    found = stacks.py_spy_path()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs py-spy (the dev lock installs it)")
        pytest.skip("no py-spy here (pip install py-spy)")
    return found


@pytest.fixture
def server() -> Iterator[Recorder]:
    recorder = Recorder()
    recorder.jobs[SLURM] = JOB
    yield recorder
    recorder.close()


RANK_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path

    def load_batch():
        Path(sys.argv[1]).write_text("ready")
        while True:
            time.sleep(0.05)

    def train():
        load_batch()

    train()
    """
)

WRAPPER_SCRIPT = textwrap.dedent(
    """
    import os, subprocess, sys
    env = dict(os.environ, RANK=os.environ["SLURM_PROCID"], LOCAL_RANK="0")
    subprocess.run([sys.executable, sys.argv[1], sys.argv[2]], env=env)
    """
)


@pytest.fixture
def ranks(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Three processes of job JOB: rank 0 by KUAE_JOB_ID; rank 1 by its Slurm id alone, under
    a wrapper that carries SLURM_PROCID but no RANK (what srun starts); and a process of
    another job, which must not be read."""
    script = tmp_path / "train.py"
    script.write_text(RANK_SCRIPT)
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(WRAPPER_SCRIPT)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("KUAE_", "SLURM_"))}
    base.pop("RANK", None)
    started = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path / "r0")],
            start_new_session=True,
            env={
                **base,
                "KUAE_JOB_ID": str(JOB),
                "RANK": "0",
                "WORLD_SIZE": "2",
                "KUAE_NODE": "gpu-a",
            },
        ),
        subprocess.Popen(
            [sys.executable, str(wrapper), str(script), str(tmp_path / "r1")],
            start_new_session=True,
            env={**base, "SLURM_JOB_ID": SLURM, "SLURM_PROCID": "1", "SLURM_NTASKS": "2"},
        ),
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path / "other")],
            start_new_session=True,
            env={**base, "KUAE_JOB_ID": str(JOB + 1), "RANK": "0", "WORLD_SIZE": "2"},
        ),
    ]
    deadline = time.monotonic() + 20
    while not all((tmp_path / name).exists() for name in ("r0", "r1", "other")):
        assert time.monotonic() < deadline, "the rank processes did not start"
        time.sleep(0.02)
    yield started
    for p in started:
        os.killpg(p.pid, signal.SIGKILL)  # the wrapper's child too
        p.wait()


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kuae_agent.cli", "stacks", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
        check=False,
    )


def test_training_thread_is_the_main_thread_innermost_last():
    threads = [
        {"thread_name": "Thread-1", "frames": [{"name": "wait", "filename": "t.py", "line": 3}]},
        {
            "thread_name": "MainThread",
            "frames": [
                {"name": "all_reduce", "filename": "c10d.py", "line": 9},
                {"name": "train", "filename": "train.py", "line": 2},
            ],
        },
    ]
    assert stacks.training_thread(threads) == [
        {"file": "train.py", "function": "train", "line": 2},
        {"file": "c10d.py", "function": "all_reduce", "line": 9},
    ]
    # No main thread with frames: the first thread that has any.
    assert stacks.training_thread(threads[:1]) == [{"file": "t.py", "function": "wait", "line": 3}]
    assert stacks.training_thread([]) == []


def test_the_jobs_ranks_are_found_read_and_posted(server, ranks, tmp_path):
    _py_spy()
    done = _run(
        ["--job", str(JOB), "--node", "gpu-b", "--cluster", "lab", "--server", server.url],
        {"KUAE_TOKEN": "agent-token", "KUAE_NODE": ""},
    )
    assert done.returncode == 0, done.stderr
    [registration] = server.posted(f"/jobs/{JOB}/ranks/")
    by_rank = {r["rank"]: r for r in registration["ranks"]}
    assert sorted(by_rank) == [0, 1]  # not the other job's process, not the wrapper
    assert by_rank[0]["node"] == "gpu-a"  # its own KUAE_NODE
    assert by_rank[1]["node"] == "gpu-b"  # the command's --node
    assert by_rank[1]["pid"] != ranks[1].pid  # the wrapper's child, which carries RANK
    assert {r["world_size"] for r in registration["ranks"]} == {2}
    reports = server.stalls()
    assert sorted(r["rank"] for r in reports) == [0, 1]
    for report in reports:
        assert report["job"] == JOB
        assert report["last_step"] is None and report["stalled_s"] is None
        functions = [f["function"] for f in report["stack"]]
        # Outermost first, innermost last: the module, train, load_batch, then time.sleep's
        # caller line inside load_batch.
        assert functions.index("train") < functions.index("load_batch"), functions
        assert report["stack"][-1]["function"] == "load_batch"
        assert report["stack"][-1]["file"].endswith("train.py")
        assert report["in_collective"] is False
    assert all(r.token == "agent-token" for r in server.requests)
    # The Slurm id, asked once. (Other tests' processes on this machine may carry Slurm ids
    # of their own, which the command asks about too: it cannot tell them apart unasked.)
    [lookup] = [
        r for r in server.requests if r.method == "GET" and r.query.get("external_id") == [SLURM]
    ]
    assert lookup.query == {"external_id": [SLURM], "cluster": ["lab"]}
    assert "rank 0 on gpu-a" in done.stdout and "load_batch" in done.stdout


def test_print_sends_nothing(server, ranks):
    _py_spy()
    done = _run(["--job", str(JOB), "--print", "--node", "gpu-b"], {"KUAE_SERVER": ""})
    assert done.returncode == 0, done.stderr
    assert server.requests == []
    # Without a server the job is found by KUAE_JOB_ID alone: rank 0.
    assert '"rank": 0' in done.stdout and '"rank": 1' not in done.stdout


def test_no_process_of_the_job_is_exit_1(server):
    _py_spy()
    done = _run(["--job", "9000999", "--server", server.url], {"KUAE_TOKEN": "t"})
    assert done.returncode == 1
    assert "no training process of job 9000999" in done.stderr
    assert server.posted("/ingest/stalls/") == []


def test_ptrace_refused_says_how_to_allow_it(server, ranks, tmp_path):
    py_spy = _py_spy()
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs as root with setpriv (util-linux) to show the refusal")
        pytest.skip("needs root and setpriv to run py-spy as an unprivileged user")
    unprivileged = tmp_path / "py-spy-as-nobody"
    unprivileged.write_text(
        f'#!/bin/sh\nexec {setpriv} --reuid=65534 --regid=65534 --clear-groups {py_spy} "$@"\n'
    )
    unprivileged.chmod(0o755)
    done = _run(
        [
            "--job",
            str(JOB),
            "--pid",
            str(ranks[0].pid),
            "--py-spy",
            str(unprivileged),
            "--server",
            server.url,
        ],
        {"KUAE_TOKEN": "t"},
    )
    assert done.returncode == 1
    assert f"rank 0 (pid {ranks[0].pid}): {stacks.PTRACE_HINT}" in done.stderr
    assert server.posted("/ingest/stalls/") == []  # nothing read, nothing sent
