"""NIC ports (issue 27): a sweep of every port of a 10,240-GPU cluster (1,280 nodes × 8 ports)
through `POST ingest/telemetry/`, timed beside the GPU sweep of the same nodes with the same
nodes per request; then the fabric check over those ports, timed beside the gpu_errors
check over the same nodes' GPUs — baselines of the same run."""

from __future__ import annotations

import datetime as dt
import json
import random
import time

from django.test import Client

from apps.telemetry.ports import COUNTERS

PORTS_PER_NODE = 8
NODES_PER_POST = 128


# Each port's counters, growing as a healthy fabric's do between sweeps (never down).
_Counters = dict[tuple[str, int], dict[str, int]]


def _grown(counters: _Counters, host: str, p: int, rng: random.Random) -> dict[str, int]:
    """Port (host, p)'s counters after a sweep's growth: a few errors, no link event."""
    now = counters.setdefault((host, p), dict.fromkeys(_NAMES, 0))
    for name, most in (("symbol_error", 2), ("port_rcv_errors", 1), ("port_xmit_discards", 3)):
        now[name] += rng.randint(0, most)
    now["port_xmit_wait"] += rng.randint(0, 10**6)
    return dict(now)


_NAMES = COUNTERS


def _port_bodies(
    hosts: list[str], ts: dt.datetime, rng: random.Random, counters: _Counters
) -> list[str]:
    """One reading of every port, `NODES_PER_POST` nodes a request: what `kuae-agent
    --fabric` sends (state, rate, the fabric's counters, the switch at the cable's end)."""
    stamp = ts.isoformat()
    bodies = []
    for i in range(0, len(hosts), NODES_PER_POST):
        ports = [
            {
                "node": host,
                "device": f"mlx5_{p}",
                "port": 1,
                "ts": stamp,
                "switch": f"leaf-{n // 32:03d}",
                "switch_port": str(n % 32 * PORTS_PER_NODE + p),
                "metrics": {
                    "state": "4: ACTIVE",
                    "phys_state": "5: LinkUp",
                    "rate_gbps": 400,
                    **_grown(counters, host, p, rng),
                },
            }
            for n, host in enumerate(hosts[i : i + NODES_PER_POST], start=i)
            for p in range(PORTS_PER_NODE)
        ]
        bodies.append(json.dumps({"ports": ports}))
    return bodies


def _post_all(client: Client, bodies: list[str]) -> float:
    start = time.perf_counter()
    for body in bodies:
        response = client.post("/api/v1/ingest/telemetry/", body, content_type="application/json")
        assert response.status_code == 202, response.content[:300]
    return time.perf_counter() - start


def bench_ports(token: str) -> _Counters:
    """Print the figures (Django set up)."""
    from apps.fleet.models import Node
    from tests.bench.intake import bench_sweep

    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Token {token}")
    hosts = list(Node.objects.order_by("hostname").values_list("hostname", flat=True))
    rng = random.Random(27)
    # The first sweep in a process is cold (as make bench's intake part finds): the second
    # is the baseline.
    *_, gpus = bench_sweep(client, hosts, rng, (NODES_PER_POST, NODES_PER_POST))
    counters: _Counters = {}
    first = _port_bodies(hosts, dt.datetime.now(dt.UTC), rng, counters)
    made_s = _post_all(client, first)
    time.sleep(0.01)
    again_s = _post_all(client, _port_bodies(hosts, dt.datetime.now(dt.UTC), rng, counters))
    ports = len(hosts) * PORTS_PER_NODE
    print(
        f"\nPorts sweep: {ports:,} ports of {len(hosts):,} nodes, {NODES_PER_POST} nodes a "
        f"request ({len(first)} requests)\n"
        f"  first (every port made): {made_s:.2f} s; next (every port updated): "
        f"{again_s:.2f} s\n"
        f"  GPU sweep of the same nodes, same requests: {gpus.seconds:.2f} s → ports "
        f"{again_s / gpus.seconds:.2f}× the GPU sweep   goal: no more than the GPU sweep"
    )
    return counters


def _run(kind: str, cluster: object) -> tuple[float, int, dict[str, int]]:
    """One run of check `kind` as the worker runs it: seconds, queries, counts."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from apps.health.models import CheckRun
    from apps.health.services import run_execute

    run = CheckRun.objects.create(cluster=cluster, kind=kind, requested_by="bench")
    start = time.perf_counter()
    connection.queries_log.clear()
    with CaptureQueriesContext(connection) as queries:
        done = run_execute(run_id=run.pk)
    seconds = time.perf_counter() - start
    assert done is not None and done.status == "done", done and done.error
    return seconds, len(queries), done.counts


def bench_fabric_check(token: str, counters: _Counters) -> None:
    """The fabric check over every port, its steady state (a new reading of every port
    since the run before, 8 of them flapping), beside the gpu_errors check over the
    cluster's GPUs."""
    from apps.fleet.models import Cluster, Node

    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Token {token}")
    hosts = list(Node.objects.order_by("hostname").values_list("hostname", flat=True))
    rng = random.Random(12)
    cluster = Cluster.objects.get()
    _run("fabric", cluster)  # the first run: every port's result made, nothing compared
    for host in hosts[:8]:
        counters[(host, 0)]["link_error_recovery"] += 50
    _post_all(client, _port_bodies(hosts, dt.datetime.now(dt.UTC), rng, counters))
    fabric_s, fabric_q, counts = _run("fabric", cluster)
    _run("gpu_errors", cluster)
    gpu_s, gpu_q, _ = _run("gpu_errors", cluster)
    print(
        f"Fabric check over {len(hosts) * PORTS_PER_NODE:,} ports (a new reading each): "
        f"{fabric_s:.2f} s, {fabric_q} queries ({counts['warn']} warn, {counts['fail']} fail)\n"
        f"  gpu_errors over the same nodes' GPUs: {gpu_s:.2f} s, {gpu_q} queries → fabric "
        f"{fabric_s / gpu_s:.2f}× gpu_errors   goal: well within its 60-s interval"
    )


def main() -> None:
    """`python -m tests.bench.ports`: this part alone, on a fresh bench database
    (BENCH_DATABASE_URL, default PostgreSQL's kuae_bench) holding a simulated 10,240-GPU
    cluster."""
    import io
    import os

    from tests.bench.run import DEFAULT_URL, django_ready

    django_ready(os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    from django.core.management import call_command

    from apps.accounts.services import token_issue, user_create_or_update

    call_command("simulate", gpus=10240, days=1, seed=1, stdout=io.StringIO())
    token = token_issue(user=user_create_or_update(username="bench-agent", role="agent"))
    bench_fabric_check(token, bench_ports(token))


if __name__ == "__main__":
    main()
