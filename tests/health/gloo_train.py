"""A real torch.distributed (gloo, CPU) training loop with the Reporter, hung on purpose.

Run once per rank by tests/health/test_hang_gloo.py: `python gloo_train.py SCENARIO`, with
RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT, KUAE_SERVER, KUAE_TOKEN, KUAE_JOB_ID and
KUAE_NODE set. Every step all-reduces a tensor and reports it. At step HANG_AT:
- `outside`: the last rank gets stuck in its data loader; the others wait in all_reduce;
- `frozen`: nothing in the script — the test freezes the last rank with SIGSTOP;
- `everyone`: every rank waits on the same storage call outside any collective;
- `pause`: every rank pauses for PAUSE_S, then training goes on to the end;
- `outside-bare`: `outside` in a job that runs no Reporter (`kuae-agent stacks` reads it);
  each rank touches `{argv[2]}/{rank}` when it reaches HANG_AT.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from kuae_agent.report import Reporter

HANG_AT = 20
STEPS = 60
STEP_S = 0.05
PAUSE_S = 3.0


def load_batch(step: int, stuck: bool) -> torch.Tensor:
    """The data loader: stuck forever when told to be (a dead NFS read, say)."""
    while stuck:
        time.sleep(0.5)
    return torch.ones(4) * step


def wait_for_storage(seconds: float) -> None:
    """Every rank waits on the same slow storage call."""
    time.sleep(seconds)


def main() -> None:
    scenario = sys.argv[1]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world)
    bare = scenario.endswith("-bare")
    scenario = scenario.removesuffix("-bare")
    rep = None
    if not bare:
        rep = Reporter(stall_min_s=1.0, stall_poll_s=0.1, stall_rereport_s=30.0, flush_every_s=0.2)
    for step in range(STEPS):
        if bare and step == HANG_AT:
            Path(sys.argv[2], str(rank)).touch()
        t0 = time.monotonic()
        if step == HANG_AT and scenario == "everyone":
            wait_for_storage(3600)
        if step == HANG_AT and scenario == "pause":
            wait_for_storage(PAUSE_S)
        batch = load_batch(
            step, stuck=scenario == "outside" and step == HANG_AT and rank == world - 1
        )
        dist.all_reduce(batch)
        time.sleep(STEP_S)
        if rep is not None:
            rep.step(step, step_time_s=time.monotonic() - t0, tokens_per_s=1000.0)
    if rep is not None:
        rep.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
