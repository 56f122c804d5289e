"""The training Reporter's cost (issue 13, docs/agent.md): `step()` on the calling thread
against an empty call of the same signature (goal ≤ 20 µs), and the memory it holds with
the server down for 10 minutes at 10 steps/s (6,000 steps; goal ≤ 50 MB) — and when the
caller outruns everything (the buffer full, memory batches at their bound). No database.

    python -m tests.bench.reporter
"""

from __future__ import annotations

import gc
import logging
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

from kuae_agent.report import MIB, Reporter
from kuae_agent.watchdog import WatchdogStats
from tests.support import closed_port


def empty(
    step: int,
    step_time_s: float | None = None,
    tokens_per_s: float | None = None,
    loss: object = None,
    grad_norm: object = None,
    compute_s: float | None = None,
) -> None:
    """The baseline: a call of the same signature that does nothing."""


def per_call_us(fn, calls: int = 20_000, rounds: int = 15) -> float:  # noqa: ANN001
    """Median over `rounds` of the mean cost of one call, in µs (the round's loop included)."""
    times = []
    for r in range(rounds):
        start = time.perf_counter()
        for i in range(calls):
            fn(i, step_time_s=0.5, tokens_per_s=1.2e6, loss=2.1, grad_norm=0.9, compute_s=0.4)
        times.append((time.perf_counter() - start) / calls * 1e6)
        if r == 0:
            times.clear()  # warm-up
    return statistics.median(times)


def rss_mib() -> float:
    """This process's resident memory."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def held_mib(steps: int, pace: int, spool: Path, **options: object) -> tuple[float, float, float]:
    """(peak, still held, RSS growth) in MiB for a Reporter taking `steps` steps with the
    server down, `pace` steps between sender wake-ups (a fake clock: the 5-s cut is forced)."""
    gc.collect()
    before_rss = rss_mib()
    tracemalloc.start()
    down = f"http://127.0.0.1:{closed_port()}"
    rep = Reporter(server=down, token="t", job_id=1, node="gpu000", env={}, spool_dir=spool,
                   at_exit=False, **options)  # fmt: skip
    for i in range(steps):
        rep.step(i, step_time_s=0.1, tokens_per_s=1.2e6, loss=2.1, grad_norm=0.9, compute_s=0.08)
        if pace and i % pace == pace - 1:
            rep._last_cut = 0.0  # the 5 s are up
            rep._wake.set()
            time.sleep(0.002)
    rep._last_cut = 0.0
    time.sleep(0.5)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    grown = rss_mib() - before_rss
    stats = rep.stats()
    rep.close(timeout_s=0)
    print(
        f"    {steps:,} steps: {stats.pending:,} samples held, {stats.dropped:,} dropped, "
        f"{stats.spooled_bytes / MIB:.1f} MiB spooled to disk"
    )
    return peak / MIB, current / MIB, grown


def watchdog_cpu(server: str, polls: int = 600) -> None:
    """The watchdog thread's CPU over 10 minutes of training: 600 of its 1-s wake-ups (the
    poll shrunk to 5 ms so they pass in 3 s), the training thread stepping at 100 steps/s
    of that clock — its stats count the thread's own CPU time (time.thread_time())."""
    rep = Reporter(server=server, token="t", job_id=1, node="gpu000", env={"RANK": "5"},
                   at_exit=False, stall_poll_s=0.005, stall_min_s=3600)  # fmt: skip
    start = time.perf_counter()
    i = 0
    while (rep.stats().watchdog or WatchdogStats()).polls < polls:
        rep.step(i, step_time_s=0.01)
        i += 1
        time.sleep(0.0005)
    wall = time.perf_counter() - start
    stats = rep.stats().watchdog or WatchdogStats()
    rep.close(timeout_s=0)
    per_poll_us = stats.cpu_s / max(stats.polls, 1) * 1e6
    print(f"  {'watchdog thread, 10 min of training':<44}{stats.cpu_s * 1e3:>6.1f} ms CPU"
          f"   ({stats.polls} wake-ups, {per_poll_us:.0f} µs each; {i:,} steps in "
          f"{wall:.1f} s; the server down: registration retried {stats.retries}×)")  # fmt: skip


def bench_reporter() -> None:
    """Print the Reporter's figures."""
    logging.getLogger("kuae_agent").setLevel(logging.ERROR)
    print("\nkuae_agent Reporter (docs/agent.md)")
    with tempfile.TemporaryDirectory() as folder:
        down = f"http://127.0.0.1:{closed_port()}"
        rep = Reporter(server=down, token="t", job_id=1, node="gpu000", env={},
                       spool_dir=Path(folder) / "cost", at_exit=False)  # fmt: skip
        base = per_call_us(empty)
        cost = per_call_us(rep.step)
        rep.close(timeout_s=0)
        bare = Reporter(server=down, token="t", job_id=1, node="gpu000", env={}, watchdog=False,
                        spool_dir=Path(folder) / "bare", at_exit=False)  # fmt: skip
        no_watchdog = per_call_us(bare.step)
        bare.close(timeout_s=0)
        silent = Reporter(server=down, token="t", job_id=1, env={"RANK": "5", "LOCAL_RANK": "5"},
                          at_exit=False)  # fmt: skip
        other_rank = per_call_us(silent.step)
        print(f"  {'step() on the calling thread':<44}{'µs':>8}{'× empty':>10}   goal")
        print(f"  {'baseline: empty call, same signature':<44}{base:>8.2f}{1:>9.1f}×")
        print(f"  {'step(), rank 0 (job-wide and per-node)':<44}{cost:>8.2f}{cost / base:>9.1f}×"
              f"   ≤ 20 µs: {cost:.2f} − {base:.2f} = {cost - base:.2f} µs")  # fmt: skip
        print(f"  {'step(), a rank that sends nothing':<44}{other_rank:>8.2f}"
              f"{other_rank / base:>9.1f}×   (its watchdog alone)")  # fmt: skip
        print(f"  {'step(), rank 0 with watchdog=False':<44}{no_watchdog:>8.2f}"
              f"{no_watchdog / base:>9.1f}×   the watchdog's share: "
              f"{cost - no_watchdog:.2f} µs")  # fmt: skip
        watchdog_cpu(down)
        print("  memory, server down (tracemalloc peak / held at the end / RSS growth)")
        peak, held, grown = held_mib(6_000, 50, Path(folder) / "outage")
        print(f"  {'10 min down at 10 steps/s (6,000 steps)':<44}{peak:>7.1f} / {held:.1f} / "
              f"{grown:.1f} MiB   goal ≤ 50 MB")  # fmt: skip
        peak, held, grown = held_mib(300_000, 0, Path(folder) / "flood")
        print(f"  {'flooded: 300,000 steps, no pause':<44}{peak:>7.1f} / {held:.1f} / "
              f"{grown:.1f} MiB   goal ≤ 50 MB")  # fmt: skip


if __name__ == "__main__":
    bench_reporter()
