"""NIC ports' intake (issue 27): a sweep of every port of a 10,240-GPU cluster (1,280 nodes ×
8 ports) through `POST ingest/telemetry/`, timed beside the GPU sweep of the same nodes
with the same nodes per request — the baseline of the same run."""

from __future__ import annotations

import datetime as dt
import json
import random
import time

from django.test import Client

PORTS_PER_NODE = 8
NODES_PER_POST = 128


def _port_bodies(hosts: list[str], ts: dt.datetime, rng: random.Random) -> list[str]:
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
                    "link_downed": 0,
                    "link_error_recovery": rng.randint(0, 3),
                    "symbol_error": rng.randint(0, 50),
                    "port_rcv_errors": rng.randint(0, 5),
                    "port_xmit_discards": rng.randint(0, 9),
                    "local_link_integrity_errors": 0,
                    "excessive_buffer_overrun_errors": 0,
                    "port_rcv_remote_physical_errors": 0,
                    "port_xmit_wait": rng.randint(0, 10**9),
                    "rnr_nak_retry_err": 0,
                    "local_ack_timeout_err": 0,
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


def bench_ports(token: str) -> None:
    """Print the figures (Django set up)."""
    from apps.fleet.models import Node
    from tests.bench.intake import bench_sweep

    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Token {token}")
    hosts = list(Node.objects.order_by("hostname").values_list("hostname", flat=True))
    rng = random.Random(27)
    # The first sweep in a process is cold (as make bench's intake part finds): the second
    # is the baseline.
    *_, gpus = bench_sweep(client, hosts, rng, (NODES_PER_POST, NODES_PER_POST))
    first = _port_bodies(hosts, dt.datetime.now(dt.UTC), rng)
    made_s = _post_all(client, first)
    time.sleep(0.01)
    again_s = _post_all(client, _port_bodies(hosts, dt.datetime.now(dt.UTC), rng))
    ports = len(hosts) * PORTS_PER_NODE
    print(
        f"\nPorts sweep: {ports:,} ports of {len(hosts):,} nodes, {NODES_PER_POST} nodes a "
        f"request ({len(first)} requests)\n"
        f"  first (every port made): {made_s:.2f} s; next (every port updated): "
        f"{again_s:.2f} s\n"
        f"  GPU sweep of the same nodes, same requests: {gpus.seconds:.2f} s → ports "
        f"{again_s / gpus.seconds:.2f}× the GPU sweep   goal: no more than the GPU sweep"
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
    bench_ports(token_issue(user=user_create_or_update(username="bench-agent", role="agent")))


if __name__ == "__main__":
    main()
