"""The rank watchdog (kuae_agent/watchdog.py, docs/agent.md): every rank registers once and,
after its first step, reports a stall with the training thread's stack, again while it
lasts, and its end — against a real HTTP server in-process (tests/agent/recorder.py), with
the intervals shrunk to fractions of a second. Plus the pure parts: `in_collective` on
hand-made stacks, the stall window."""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kuae_agent.report import Reporter
from kuae_agent.watchdog import (
    COLLECTIVES,
    WatchdogStats,
    in_collective,
    process_started_at,
    stall_window,
    step_times,
)
from tests.agent.recorder import Recorder
from tests.support import closed_port

FAST = {"stall_min_s": 0.3, "stall_rereport_s": 0.6, "stall_poll_s": 0.02, "backoff_max_s": 0.2}
ENV = {"KUAE_JOB_ID": "7", "KUAE_NODE": "gpu003", "RANK": "3", "LOCAL_RANK": "3", "WORLD_SIZE": "8"}


@pytest.fixture
def server() -> Iterator[Recorder]:
    recorder = Recorder()
    yield recorder
    recorder.close()


def reporter(server: Recorder, env: dict[str, str] | None = None, **options: Any) -> Reporter:
    """A Reporter on `server` with the fast intervals, configured by `env` alone."""
    env = {"KUAE_SERVER": server.url, "KUAE_TOKEN": "tok", **(ENV if env is None else env)}
    return Reporter(env=env, at_exit=False, **{**FAST, **options})


def wd(rep: Reporter) -> WatchdogStats:
    """The Reporter's watchdog's stats."""
    stats = rep.stats().watchdog
    assert stats is not None
    return stats


def wait_for(predicate: Callable[[], object], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def stuck_here(release: threading.Event) -> None:
    """Where the test's training thread hangs."""
    release.wait()


def train(rep: Reporter, steps: int, release: threading.Event, pace_s: float = 0.001) -> None:
    """A training loop: `steps` steps, then stuck until `release`, then 5 more steps."""
    for step in range(steps):
        rep.step(step, step_time_s=pace_s, tokens_per_s=1.0)
        time.sleep(pace_s)
    stuck_here(release)
    for step in range(steps, steps + 5):
        rep.step(step, step_time_s=pace_s, tokens_per_s=1.0)
        time.sleep(pace_s)


# --- the pure parts ---------------------------------------------------------------------


def frame(file: str, function: str, line: int = 1) -> dict[str, Any]:
    return {"file": file, "function": function, "line": line}


FUNCTIONAL = "/x/torch/distributed/_functional_collectives.py"
C10D = "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py"
LINES = {
    ("train.py", 40): "        loss = model(batch)\n",
    ("train.py", 41): "        work.wait()\n",
    ("train.py", 42): "        pid, status = os.waitpid(child, 0)\n",
    ("train.py", 43): "        handle.wait(timeout=timedelta(seconds=30))\n",
}


def source(file: str, line: int) -> str:
    return LINES.get((file, line), "")


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        ([], False),
        ([frame("train.py", "main", 10), frame("train.py", "step", 40)], False),
        # DDP's reducer in all_reduce, wrapped by c10d's logger: the collective is not innermost
        (
            [
                frame("train.py", "main"),
                frame(C10D, "all_reduce", 2501),
                frame("/x/torch/distributed/c10d_logger.py", "_exception_logger.<locals>.wrapper"),
            ],
            True,
        ),  # fmt: skip
        ([frame("train.py", "main"), frame(C10D, "barrier", 4100)], True),
        ([frame("train.py", "main"), frame(C10D, "send", 1900)], True),
        ([frame("train.py", "main"), frame(FUNCTIONAL, "wait_tensor")], True),
        # A function of that name outside torch.distributed is not a collective
        ([frame("train.py", "main"), frame("/home/me/mylib/comm.py", "all_reduce")], False),
        # a torch.distributed helper that is not a collective
        ([frame("train.py", "main"), frame(C10D, "get_rank")], False),
        # an async collective's handle waited on: the innermost line calls .wait(
        ([frame("train.py", "main", 10), frame("train.py", "step", 41)], True),
        ([frame("train.py", "main", 10), frame("train.py", "step", 43)], True),
        # .waitpid( is not .wait(; and only the innermost frame's line counts
        ([frame("train.py", "main", 10), frame("train.py", "step", 42)], False),
        ([frame("train.py", "step", 41), frame("train.py", "load", 40)], False),
        # Windows-style paths
        ([frame("C:\\py\\torch\\distributed\\distributed_c10d.py", "all_gather")], True),
    ],
)
def test_in_collective_on_hand_made_stacks(stack, expected):
    assert in_collective(stack, source) is expected


def test_in_collective_reads_the_innermost_line_from_disk(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("def step(work):\n    work.wait()\n")
    assert in_collective([frame(str(script), "step", 2)])
    assert not in_collective([frame(str(script), "step", 1)])
    assert not in_collective([frame(str(tmp_path / "gone.py"), "step", 2)])  # no file: no
    assert {"all_reduce", "all_gather", "broadcast", "reduce_scatter", "all_to_all",
            "barrier", "send", "recv"} <= COLLECTIVES  # fmt: skip


def test_the_stall_window_is_five_median_steps_with_a_floor():
    assert stall_window([], 60.0) == 60.0
    assert stall_window([1.0] * 50, 60.0) == 60.0
    assert stall_window([20.0] * 49 + [1000.0], 60.0) == 100.0  # the median, not the mean
    assert stall_window([100.0] * 10 + [2.0] * 50, 60.0) == 60.0  # the last 50 only
    assert stall_window([30.0, 31.0, 29.0], 60.0) == 150.0
    assert step_times([(1.0, 0), (1.5, 1), (3.5, 2)]) == [0.5, 2.0]


# --- against a server ---------------------------------------------------------------------


def test_registration_body(server):
    rep = reporter(server)
    wait_for(lambda: server.posted("/ranks/"))
    rep.close()
    [request] = [r for r in server.requests if r.path.endswith("/ranks/")]
    assert request.path == "/api/v1/jobs/7/ranks/" and request.token == "tok"
    assert request.body == {
        "ranks": [
            {
                "rank": 3,
                "world_size": 8,
                "node": "gpu003",
                "local_rank": 3,
                "pid": os.getpid(),
                "started_at": process_started_at(),
            }
        ]
    }
    assert request.body["ranks"][0]["started_at"].endswith("Z")
    assert wd(rep).registered


@pytest.mark.parametrize(
    ("env", "rank", "world_size"),
    [
        ({"RANK": "5", "WORLD_SIZE": "16"}, 5, 16),
        ({"SLURM_PROCID": "2", "SLURM_NTASKS": "4"}, 2, 4),  # srun's
        ({"RANK": "1", "WORLD_SIZE": "2", "SLURM_NTASKS": "64"}, 1, 2),  # torchrun's wins
        ({}, 0, 1),  # one process
        ({"RANK": "9"}, 9, 10),  # no world size: at least the rank's
    ],
)
def test_world_size_from_the_environment(server, env, rank, world_size):
    rep = reporter(server, {"KUAE_JOB_ID": "7", **env})
    wait_for(lambda: server.posted("/ranks/"))
    rep.close(timeout_s=0)
    [entry] = server.posted("/ranks/")[0]["ranks"]
    assert (entry["rank"], entry["world_size"]) == (rank, world_size)


@pytest.mark.parametrize(
    ("ranks", "sender"),
    [
        ({"RANK": "0", "LOCAL_RANK": "0"}, True),
        ({"RANK": "8", "LOCAL_RANK": "0"}, True),  # the node's sample
        ({"RANK": "3", "LOCAL_RANK": "3"}, False),  # sends no samples: still registers
        ({"SLURM_PROCID": "13", "SLURM_LOCALID": "5"}, False),
    ],
)
def test_every_rank_registers_and_finds_the_job_by_its_slurm_id(server, ranks, sender):
    """The job found by its Slurm id on every rank — also those that send no samples."""
    server.jobs["88412"] = 41
    env = {"SLURM_JOB_ID": "88412", "KUAE_CLUSTER": "c1", "WORLD_SIZE": "16", **ranks}
    rep = reporter(server, env)
    assert (rep._thread is not None) is sender  # the samples' sender thread
    assert rep._watchdog is not None  # every rank watches
    wait_for(lambda: server.posted("/ranks/"))
    rep.close(timeout_s=1)
    assert rep.job_id == 41
    lookups = [r for r in server.requests if r.method == "GET"]
    assert lookups and lookups[0].query == {"external_id": ["88412"], "cluster": ["c1"]}
    assert [r.path for r in server.requests if r.path.endswith("/ranks/")] == [
        "/api/v1/jobs/41/ranks/"
    ]
    if not sender:
        assert not server.posted("/metrics/")


def test_a_stall_is_reported_with_the_training_threads_stack_again_and_its_end(server):
    """Nothing before the first step; after it, a stall after the window with the stack of
    the thread that calls step() (here not the main thread), a re-report, and `resumed`."""
    rep = reporter(server)
    time.sleep(0.6)  # twice the window, before any step: not armed
    assert server.posted("/ranks/") and not server.stalls()
    release = threading.Event()
    trainer = threading.Thread(target=train, args=(rep, 20, release), name="trainer")
    began = time.monotonic()
    trainer.start()
    wait_for(lambda: len(server.stalls()) >= 2)  # the stall and its re-report
    release.set()
    trainer.join(5)
    wait_for(lambda: any(r["resumed"] for r in server.stalls()))
    time.sleep(0.1)
    rep.close()
    first, again, *rest = server.stalls()
    assert first["job"] == 7 and first["node"] == "gpu003" and first["rank"] == 3
    assert first["world_size"] == 8 and first["last_step"] == 19 and not first["resumed"]
    assert 0.3 <= first["stalled_s"] < 2.0 and first["ts"].endswith("Z")
    stack = first["stack"]
    assert 0 < len(stack) <= 64 and set(stack[0]) == {"file", "function", "line"}
    names = [f["function"] for f in stack]
    assert names[-1] == "Condition.wait"  # innermost last: threading's wait in stuck_here
    assert names[-3:-1] == ["stuck_here", "Event.wait"] and "train" in names
    assert stack[-3]["file"] == __file__ and "Thread.run" in names  # the trainer thread's
    assert first["in_collective"] is False
    assert again["stalled_s"] >= first["stalled_s"] + 0.5 and again["last_step"] == 19
    assert again["stack"][-3]["function"] == "stuck_here"
    [resumed] = [r for r in rest if r["resumed"]]
    assert resumed["last_step"] == 20 and resumed["stack"] == []
    assert resumed["stalled_s"] >= again["stalled_s"]
    assert resumed["stalled_s"] <= time.monotonic() - began
    stats = wd(rep)
    assert stats.stalls == 1 and not stats.stalled
    assert stats.sent == len(server.stalls()) and stats.cpu_s > 0


def test_the_window_is_five_times_the_median_step(server):
    """Steps of 0.1 s: the window is 0.5 s, not the 0.3-s floor."""
    rep = reporter(server)
    release = threading.Event()
    trainer = threading.Thread(target=train, args=(rep, 6, release, 0.1), daemon=True)
    trainer.start()
    wait_for(lambda: server.stalls())
    release.set()
    trainer.join(5)
    rep.close(timeout_s=0.5)
    first = server.stalls()[0]
    assert first["stalled_s"] >= 0.49  # 5 × a median of ≥ 0.1 s (the floor would be 0.3)


def test_a_thread_stuck_in_a_collective_is_in_collective(server, tmp_path):
    """A training thread blocked inside torch/distributed/distributed_c10d.py's all_reduce
    (a stand-in module of that path: no torch needed)."""
    c10d = tmp_path / "torch" / "distributed" / "distributed_c10d.py"
    c10d.parent.mkdir(parents=True)
    c10d.write_text("def all_reduce(tensor, release):\n    release.wait()\n    return tensor\n")
    spec = importlib.util.spec_from_file_location("fake_c10d", c10d)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rep = reporter(server)
    release = threading.Event()

    def loop() -> None:
        rep.step(1, step_time_s=0.01, tokens_per_s=1.0)
        module.all_reduce([1.0], release)
        rep.step(2, step_time_s=0.01, tokens_per_s=1.0)

    trainer = threading.Thread(target=loop, daemon=True)
    trainer.start()
    wait_for(lambda: server.stalls())
    release.set()
    trainer.join(5)
    rep.close(timeout_s=0.5)
    report = server.stalls()[0]
    assert report["in_collective"] is True
    assert [f["function"] for f in report["stack"]][-3:] == [
        "all_reduce",
        "Event.wait",
        "Condition.wait",
    ]
    assert report["stack"][-3]["file"] == str(c10d)


def test_server_down_then_up_the_newest_report_arrives(server):
    """Down (connections refused) through the stall and its re-reports: the watchdog keeps
    only the newest report and retries with backoff; back up, the registration and then
    that report arrive."""
    server.mode = "refuse"
    rep = reporter(server, stall_rereport_s=0.2)
    release = threading.Event()
    trainer = threading.Thread(target=train, args=(rep, 10, release), daemon=True)
    trainer.start()
    wait_for(lambda: wd(rep).superseded >= 2)
    stats = wd(rep)
    assert stats.retries >= 2 and not stats.registered
    assert not server.requests  # nothing got through
    server.mode = "up"
    wait_for(lambda: server.stalls())
    release.set()
    trainer.join(5)
    rep.close()
    paths = [r.path for r in server.requests]
    assert paths[0] == "/api/v1/jobs/7/ranks/"  # registration first
    first = server.stalls()[0]
    assert not first["resumed"] and first["stalled_s"] >= 0.3 + 0.2 * 2  # a later one
    assert first["stack"][-3]["function"] == "stuck_here"


def test_step_stays_cheap_and_never_raises_with_the_watchdog(tmp_path):
    """A server that is not there: step() still costs microseconds and takes anything."""
    down = f"http://127.0.0.1:{closed_port()}"
    rep = Reporter(server=down, token="t", job_id=1, env={"RANK": "4", "LOCAL_RANK": "4"},
                   at_exit=False, spool_dir=tmp_path, **FAST)  # fmt: skip
    rep.step("not a step")  # type: ignore[arg-type]
    rep.step(None)  # type: ignore[arg-type]
    started = time.perf_counter()
    for step in range(10_000):
        rep.step(step)
    per_step_us = (time.perf_counter() - started) / 10_000 * 1e6
    rep.close(timeout_s=0)
    assert per_step_us < 20


def test_close_stops_the_watchdog_and_watchdog_false_starts_none(server):
    rep = reporter(server)
    wait_for(lambda: server.posted("/ranks/"))
    thread = rep._watchdog._thread if rep._watchdog else None
    rep.close()
    assert thread is not None and not thread.is_alive()
    off = reporter(server, watchdog=False)
    assert off._watchdog is None and off._thread is None  # rank 3: nothing at all
    off.step(1)
    off.close()
    assert len(server.posted("/ranks/")) == 1


def test_without_a_stall_nothing_is_reported(server):
    rep = reporter(server)
    for step in range(40):
        rep.step(step)
        time.sleep(0.02)
    rep.close()
    assert not server.stalls() and wd(rep).stalls == 0 and wd(rep).polls > 10
