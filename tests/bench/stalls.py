"""The stall burst (issue 25): a 10,000-rank job hangs and every rank's watchdog reports
within a minute — accepted without an error, then judged by one `job_hang` run.

Figures: registering the ranks, the burst as 10,000 single-report POSTs (what the ranks do),
the verdict's check run, against a baseline of the same number of `/healthz` GETs through
the same client."""

from __future__ import annotations

import datetime as dt
import json
import time

RANKS = 10_000
CULPRIT = 4_242
WAIT = [
    {
        "file": "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",
        "function": "all_reduce",
        "line": 2501,
    },
    {"file": "/work/train.py", "function": "train_step", "line": 88},
]
LOADER = [
    {"file": "/work/train.py", "function": "train_step", "line": 80},
    {"file": "/work/data.py", "function": "__next__", "line": 41},
]


def _stack(stack: list[dict[str, object]]) -> list[dict[str, object]]:
    return list(reversed(stack))  # innermost last


def bench_stalls(token: str) -> None:
    """Print the figures (Django set up: its imports are here, so `main` can set it up)."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from apps.fleet.models import Node
    from apps.health.services import run_execute, runs_request
    from apps.incidents.models import Incident
    from apps.jobs.choices import JobStatus
    from apps.jobs.models import Job

    nodes = list(Node.objects.order_by("hostname").values_list("hostname", flat=True))
    per_node = max(1, -(-RANKS // len(nodes)))
    hosts = [nodes[r // per_node] for r in range(RANKS)]
    cluster = Node.objects.get(hostname=nodes[0]).cluster
    now = timezone.now()
    job = Job.objects.create(
        cluster=cluster,
        name="stall-burst",
        gpu_count=RANKS,
        status=JobStatus.RUNNING,
        started_at=now - dt.timedelta(hours=1),
        progress_at=now - dt.timedelta(seconds=70),
        progress_step=41_217,
        last_step_time_s=1.0,
    )
    job.nodes.set(Node.objects.filter(hostname__in=set(hosts)))
    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Token {token}")
    started = (now - dt.timedelta(hours=1)).isoformat()
    print(f"\nStall burst: {RANKS:,} ranks on {len(set(hosts)):,} nodes")
    t0 = time.perf_counter()
    for i in range(0, RANKS, 1000):
        body = {
            "ranks": [
                {
                    "rank": r,
                    "world_size": RANKS,
                    "node": hosts[r],
                    "local_rank": r % 8,
                    "started_at": started,
                }
                for r in range(i, min(RANKS, i + 1000))
            ]
        }
        response = client.post(
            f"/api/v1/jobs/{job.pk}/ranks/", json.dumps(body), content_type="application/json"
        )
        assert response.status_code == 202, response.content[:300]
    register_s = time.perf_counter() - t0
    ts = now.isoformat()
    bodies = [
        json.dumps(
            {
                "job": job.pk,
                "node": hosts[r],
                "ts": ts,
                "rank": r,
                "last_step": 41_216,
                "stalled_s": 60.0,
                "stack": _stack(LOADER if r == CULPRIT else WAIT),
                "in_collective": r != CULPRIT,
            }
        )
        for r in range(RANKS)
    ]
    t0 = time.perf_counter()
    for _ in range(RANKS):
        client.get("/healthz")
    base_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    errors = 0
    for body in bodies:
        response = client.post("/api/v1/ingest/stalls/", body, content_type="application/json")
        errors += response.status_code != 202
    burst_s = time.perf_counter() - t0
    again = json.loads(bodies[0]) | {"ts": timezone.now().isoformat()}  # newer: stored
    with CaptureQueriesContext(connection) as queries:
        client.post("/api/v1/ingest/stalls/", json.dumps(again), content_type="application/json")
    print(f"  register {RANKS:,} ranks (10 requests of 1,000): {register_s:.2f} s")
    print(
        f"  {RANKS:,} stall reports, one POST each: {burst_s:.1f} s "
        f"({1000 * burst_s / RANKS:.2f} ms each, {errors} errors); baseline {RANKS:,} GET "
        f"/healthz: {base_s:.1f} s → {burst_s / base_s:.1f}×   goal: within a minute, no error"
    )
    work = [q for q in queries.captured_queries if q["sql"] not in ("BEGIN", "COMMIT")]
    print(
        f"  {RANKS / burst_s:,.0f} reports a second; one report (its token known): "
        f"{len(work)} queries besides BEGIN and COMMIT   goal: 2–3"
    )
    run = runs_request(cluster=cluster, kinds=["job_hang"], requested_by="bench")[0]
    t0 = time.perf_counter()
    run_execute(run_id=run.pk, now=now + dt.timedelta(seconds=65))
    verdict_s = time.perf_counter() - t0
    incident = Incident.objects.filter(job=job, category="hang").first()
    named = [n.hostname for n in incident.nodes.all()] if incident else []
    print(
        f"  job_hang run judging them: {verdict_s:.2f} s   goal: within one check interval (60 s)"
    )
    print(
        f"  incident: {incident.title if incident else 'none'}; nodes named: {named} "
        f"(rank {CULPRIT} is on {hosts[CULPRIT]})"
    )


def main() -> None:
    """`python -m tests.bench.stalls`: this part of `make bench` alone, on a fresh bench
    database (BENCH_DATABASE_URL, default PostgreSQL's kuae_bench) holding a simulated
    10,240-GPU cluster (1,280 nodes) for the ranks to run on."""
    import io
    import os

    from tests.bench.run import DEFAULT_URL, django_ready

    django_ready(os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    from django.core.management import call_command

    from apps.accounts.services import token_issue, user_create_or_update

    call_command("simulate", gpus=10240, days=1, seed=1, stdout=io.StringIO())
    bench_stalls(token_issue(user=user_create_or_update(username="bench-agent", role="agent")))


if __name__ == "__main__":
    main()
