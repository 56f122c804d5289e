"""The node grids' pages at fleet scale (docs/pages.md, Node grids): the overview, Health and
Topology at 12,800 nodes (102,400 GPUs), each page's HTML bytes and median server time.

`python -m tests.bench.grid_pages [--nodes 12800] [--reuse]` on BENCH_DATABASE_URL (a fresh
PostgreSQL database, dropped and recreated, unless --reuse finds the fleet already built
there). The fleet: racks of 16 nodes, a leaf switch per rack, two PDUs and two NVLink domains
a rack; one node in a hundred out of service (drained, down, suspect, in maintenance), one
in a hundred with a warning or failing check, and a running job on three quarters of the
nodes. Prints a figure per page and asserts nothing; the budget the pages must keep is
tests/reports/test_grid_budget.py's.
"""

from __future__ import annotations

import argparse
import os
import time

from tests.bench.run import DEFAULT_URL, django_ready

CLUSTER = "kuae-grid"
PER_RACK = 16


def fleet_build(nodes: int, *, name: str = CLUSTER, prefix: str = "") -> None:
    """Register the fleet through the services, then mark its troubles and its job (its
    names and places begin with `prefix`)."""
    from django.db import connection
    from django.utils import timezone

    from apps.fleet.models import Node
    from apps.fleet.services import NodeSpec, cluster_create, nodes_register
    from apps.health.models import CheckResult
    from apps.jobs.models import Job

    start = time.perf_counter()
    cluster = cluster_create(
        name=name, gpu_model="H100", peak_tflops_per_gpu=989.0, gpus_per_node=8
    )
    specs = []
    for i in range(nodes):
        rack, slot, half = i // PER_RACK, i % PER_RACK, "ab"[(i % PER_RACK) // 8]
        specs.append(
            NodeSpec(
                hostname=f"{prefix}r{rack:03d}n{slot:02d}",
                rack=f"{prefix}r{rack:03d}",
                switch=f"{prefix}leaf-{rack:03d}",
                pdu=f"{prefix}pdu-{rack:03d}{half}",
                nvlink_domain=f"{prefix}nvl-{rack:03d}{half}",
            )
        )
    for at in range(0, len(specs), 2000):
        nodes_register(cluster=cluster, specs=specs[at : at + 2000], by="bench")
    print(f"  {nodes:,} nodes registered in {time.perf_counter() - start:.1f} s", flush=True)
    ordered = Node.objects.filter(cluster=cluster).order_by("hostname")
    pks = list(ordered.values_list("pk", flat=True))
    troubles = {
        "drained": "xid 79: GPU fell off the bus",
        "down": "not responding",
        "suspect": "ecc: 3 uncorrectable",
        "maintenance": "planned: BMC firmware",
    }
    for n, pk in enumerate(pks[37::100]):
        state = list(troubles)[n % 4]
        Node.objects.filter(pk=pk).update(state=state, state_reason=troubles[state])
    now = timezone.now()
    CheckResult.objects.bulk_create(
        [
            CheckResult(
                cluster=cluster,
                kind="thermal",
                target=f"node:{pk}",
                node_id=pk,
                status="fail" if n % 4 == 0 else "warn",
                message="GPU 3 at 91 °C (limit 87 °C)",
                at=now,
                since=now,
            )
            for n, pk in enumerate(pks[71::100])
        ]
    )
    job = Job.objects.create(
        cluster=cluster,
        name="flagship",
        gpu_count=8 * (len(pks) * 3 // 4),
        status="running",
        started_at=now,
    )
    job.nodes.set(pks[: len(pks) * 3 // 4])
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    print(f"  fleet built in {time.perf_counter() - start:.1f} s", flush=True)


def measure(repeat: int) -> None:
    """Each page's bytes and median server time (after a warm-up)."""
    from django.test import Client

    from apps.accounts.services import user_create_or_update
    from tests.bench.timing import median_ms

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user_create_or_update(username="bench", role="manager"))
    for label, path in (
        ("overview", f"/?cluster={CLUSTER}"),
        ("health", f"/health/?cluster={CLUSTER}"),
        ("topology", f"/topology/?cluster={CLUSTER}"),
    ):
        size = 0

        def get(path: str = path) -> None:
            nonlocal size
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)
            size = len(response.content)

        ms = median_ms(get, repeat)
        print(f"{label:<10} {size / 1000:>9,.1f} kB {ms:>9,.0f} ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=12800)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--reuse", action="store_true", help="measure the fleet built before")
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    if args.reuse:
        os.environ["DATABASE_URL"] = url
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kuaeweb.settings_test")
        import django

        django.setup()
    else:
        django_ready(url)
        fleet_build(args.nodes)
    measure(args.repeat)


if __name__ == "__main__":
    main()
