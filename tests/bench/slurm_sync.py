"""Slurm live sync benchmark (issue 12): one whole sync of a cluster — `sinfo` of 2,000
nodes, `squeue` of 1,000 or 5,000 jobs, `sacct` of the jobs that ended — through
`apps.scheduler.services.cluster_sync`, first on a new cluster (every node and job new) and
then steady (the same answers again: every row known). The answers are replayed from the
scaled-up real 22.05 records of tests/bench/slurm.py; nothing else is simulated.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

from tests.bench.slurm import sacct_answer, squeue_answer

SINFO = Path(__file__).resolve().parents[1] / "data" / "slurm" / "sinfo-22.05-drain.json"
SIZES = (1_000, 5_000)
NODES = 2_000


def sinfo_answer(prefix: str, *, drained_every: int = 50) -> dict[str, Any]:
    """`sinfo --json` (22.05) of NODES nodes, one in `drained_every` drained by a person."""
    real = json.loads(SINFO.read_text())
    idle = next(n for n in real["nodes"] if not n["state_flags"])
    nodes = []
    for i in range(1, NODES + 1):
        node = copy.deepcopy(idle)
        node["name"] = f"{prefix}{i:04d}"
        if i % drained_every == 0:
            node["state_flags"], node["reason"] = ["DRAIN"], f"bad PSU, ticket {i}"
            node["reason_set_by_user"] = "alice"
        nodes.append(node)
    return {"meta": real["meta"], "errors": [], "nodes": nodes}


class Replay:
    """A scheduler connection that answers with recorded documents (the Protocol of
    apps.scheduler.connection); drains and resumes are not part of this bench."""

    def __init__(self, nodes: Any, active: Any, ended: Any) -> None:
        self._nodes, self._active, self._ended = nodes, active, ended

    def describe(self) -> str:
        return "replayed Slurm answers"

    def jobs_active(self) -> Any:
        return self._active

    def jobs_since(self, since: dt.datetime) -> Any:
        return self._ended

    def nodes(self) -> Any:
        return self._nodes

    def drain(self, node: str, reason: str) -> None:
        raise NotImplementedError

    def resume(self, node: str) -> None:
        raise NotImplementedError


def bench_slurm_sync() -> None:
    """Print a whole sync's time and queries at 1,000 and 5,000 jobs, new and steady."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from apps.fleet.services import cluster_create
    from apps.scheduler.services import cluster_sync

    rows = []
    for size in SIZES:
        prefix = f"s{size}n"
        cluster = cluster_create(
            name=f"bench-sync-{size}", gpu_model="H100", peak_tflops_per_gpu=989, gpus_per_node=8
        )
        running = squeue_answer(size, prefix=prefix)
        ended = sacct_answer(size // 5, prefix=prefix)  # a fifth ended since the last sync
        for phase in ("first", "steady"):
            conn = Replay(sinfo_answer(prefix), running, ended)
            start = time.perf_counter()
            with CaptureQueriesContext(connection) as queries:
                report = cluster_sync(cluster=cluster, conn=conn)
            assert report.ok, report.error
            rows.append((size, phase, time.perf_counter() - start, len(queries), report.counts))
    print(f"\nSlurm live sync: one whole sync, {NODES:,} nodes ({connection.vendor})")
    print(f"{'jobs':>7} {'sync':<8}{'seconds':>9}{'queries':>9}   what it did")
    for size, phase, seconds, queries, counts in rows:
        did = (
            f"{counts.get('nodes_new', 0)} nodes new, {counts.get('nodes_mirrored', 0)} drains "
            f"mirrored, {counts.get('active_created', 0)}+{counts.get('active_updated', 0)} "
            f"active, {counts.get('ended_updated', 0)} ended"
        )
        print(f"{size:>7,} {phase:<8}{seconds:>9.2f}{queries:>9}   {did}")
    same = all(
        next(q for s, p, _, q, _ in rows if s == SIZES[0] and p == phase)
        == next(q for s, p, _, q, _ in rows if s == SIZES[-1] and p == phase)
        for phase in ("first", "steady")
    )
    print(f"  queries equal at {SIZES[0]:,} and {SIZES[-1]:,} jobs: {'yes' if same else 'NO'}")
