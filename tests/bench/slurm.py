"""Slurm intake benchmark (issue 12): one `squeue --json` answer of 1,000 and 5,000 jobs on
2,000 nodes, then the `sacct --json` answer of the same jobs ended, each ingested in one call;
against the same records ingested job by job, in the same run.

The answers are the real Slurm 22.05 records of tests/data/slurm/22.05 scaled up: each job
a copy of one of them with its own id, submit time, nodes and GPUs.
"""

from __future__ import annotations

import copy
import json
import re
import time
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm" / "22.05"
T0 = 1_796_100_000
SIZES = (1_000, 5_000)
ONE_BY_ONE = 300  # records ingested one call each, for the per-job baseline


@cache
def _templates() -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    squeue = json.loads((DATA / "squeue-22.05.json").read_text())["jobs"]
    sacct = json.loads((DATA / "sacct-22.05-battery.json").read_text())["jobs"]
    ended = {j["job_id"]: j for j in sacct if j["state"]["current"] not in ("NODE_FAIL",)}
    return squeue, {k: v for k, v in ended.items() if j_started(v)}


def j_started(record: dict[str, Any]) -> bool:
    """An accounting record of an attempt that ran."""
    return bool(record["time"].get("start"))


def _placement(i: int, pool: int, prefix: str) -> tuple[str, int]:
    """Job i's nodes (1, 2, 4 or 8 neighbours of the pool) as a hostlist, and their count."""
    width = (1, 2, 4, 8)[i % 4]
    first = (i * 7) % (pool - width) + 1
    return f"{prefix}[{first:04d}-{first + width - 1:04d}]", width


def _tres_list(entries: list[dict[str, Any]], gpus: int) -> list[dict[str, Any]]:
    return [{**e, "count": gpus} if e.get("type") == "gres" else e for e in entries]


def squeue_answer(count: int, *, pool: int = 2_000, prefix: str = "bn", base: int = 1) -> dict:
    """A `squeue --json` answer (22.05) of `count` jobs: running and pending as in the real
    one, the running on 1–8 of `pool` nodes with 8 GPUs each."""
    squeue, _ = _templates()
    jobs = []
    for i in range(count):
        job = copy.deepcopy(squeue[i % len(squeue)])
        job["job_id"] = base + i
        job["submit_time"] = T0 + i
        if job["job_state"] == "PENDING":
            job["nodes"] = ""
        else:
            job["job_state"] = "RUNNING"
            job["nodes"], width = _placement(i, pool, prefix)
            job["start_time"], job["end_time"] = T0 + i + 60, T0 + i + 86_400
            job["tres_alloc_str"] = re.sub(
                r"gres/gpu=\d+", f"gres/gpu={8 * width}", job["tres_alloc_str"]
            )
        jobs.append(job)
    return {"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "errors": [], "jobs": jobs}


def sacct_answer(count: int, *, pool: int = 2_000, prefix: str = "bn", base: int = 1) -> dict:
    """The `sacct --json` answer (22.05) of the same jobs, every one ended (completed,
    failed, cancelled or timed out as in the real records)."""
    _, ended = _templates()
    kinds = sorted(ended)
    jobs = []
    for i in range(count):
        job = copy.deepcopy(ended[kinds[i % len(kinds)]])
        job["job_id"] = base + i
        job["array"] = {**job["array"], "job_id": 0, "task_id": None}
        job["nodes"], width = _placement(i, pool, prefix)
        job["time"] = {
            **job["time"],
            "submission": T0 + i,
            "start": T0 + i + 60,
            "end": T0 + i + 3_600,
        }
        job["tres"] = {
            "allocated": _tres_list(job["tres"]["allocated"], 8 * width),
            "requested": _tres_list(job["tres"]["requested"], 8 * width),
        }
        jobs.append(job)
    return {"meta": {"plugin": {"type": "openapi/dbv0.0.38"}}, "errors": [], "jobs": jobs}


def _cluster(n: int) -> tuple[str, str]:
    """A new cluster with its 2,000 nodes registered: (name, hostname prefix)."""
    from apps.fleet.services import NodeSpec, cluster_create, nodes_register

    name, prefix = f"bench-slurm-{n}", f"b{n}n"
    cluster = cluster_create(name=name, gpu_model="H100", peak_tflops_per_gpu=989, gpus_per_node=8)
    nodes_register(
        cluster=cluster, specs=[NodeSpec(hostname=f"{prefix}{i:04d}") for i in range(1, 2001)]
    )
    return name, prefix


def bench_slurm() -> None:
    """Print the figures: time and queries per answer size, against the same records
    ingested one call each."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from apps.scheduler.services import slurm_ingest

    kinds = (("squeue", "new jobs", squeue_answer), ("sacct", "the same, ended", sacct_answer))
    bulk: dict[tuple[str, int], tuple[float, int]] = {}
    for n, size in enumerate(SIZES):
        name, prefix = _cluster(n)
        for kind, _, build in kinds:
            answer = build(size, prefix=prefix)
            start = time.perf_counter()
            with CaptureQueriesContext(connection) as queries:
                counts = slurm_ingest(cluster_name=name, payload=answer)
            bulk[(kind, size)] = (time.perf_counter() - start, len(queries))
            assert counts["created"] + counts["updated"] == size, counts
    name, prefix = _cluster(len(SIZES))
    single: dict[str, float] = {}
    for kind, _, build in kinds:
        answer = build(ONE_BY_ONE, prefix=prefix)
        start = time.perf_counter()
        for job in answer["jobs"]:
            slurm_ingest(cluster_name=name, payload={"jobs": [job]})
        single[kind] = (time.perf_counter() - start) / ONE_BY_ONE

    top = max(SIZES)
    print(f"\nSlurm intake: one answer per call on 2,000 nodes ({connection.vendor})")
    print(f"{'answer':<36}{'seconds':>9}{'queries':>9}{'ms/job':>9}{'× faster':>10}   goal")
    for kind, what, _ in kinds:
        for size in SIZES:
            seconds, queries = bulk[(kind, size)]
            per_job = seconds / size
            print(
                f"{f'{kind} ({what}), {size:,} jobs':<36}{seconds:>9.2f}{queries:>9}"
                f"{per_job * 1000:>9.3f}{single[kind] / per_job:>9.0f}×   "
                + ("≤ 1 s; queries as for 1,000" if size == top else "")
            )
        print(
            f"{f'  baseline: {ONE_BY_ONE} calls of 1 job':<36}"
            f"{single[kind] * ONE_BY_ONE:>9.2f}{'':>9}{single[kind] * 1000:>9.3f}"
            f"{'1':>9}×   (→ {single[kind] * top:.0f} s for {top:,})"
        )
    equal = all(bulk[(k, SIZES[0])][1] == bulk[(k, top)][1] for k, _, _ in kinds)
    print(f"  queries equal at {SIZES[0]:,} and {top:,} jobs: {'yes' if equal else 'NO'}")
