"""`make bench`: figures at cluster scale, each with a baseline measured in the same run.

Runs against PostgreSQL (BENCH_DATABASE_URL, default a `kuae_bench` database on
127.0.0.1), which it drops and recreates. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import atexit
import io
import os
import shutil
import sys
import time
from pathlib import Path

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/kuae_bench"


def _prepare_database(url: str) -> None:
    """Drop and recreate the bench database (PostgreSQL) or delete the file (SQLite)."""
    if url.startswith("sqlite"):
        path = url.split("sqlite:///", 1)[1]
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        return
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def django_ready(url: str) -> None:
    """A fresh bench database at `url`, migrated, and Django set up on it. The process's own
    var/ folder (settings_test makes one per process) goes when it exits, as pytest's does."""
    _prepare_database(url)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kuaeweb.settings_test")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    folder = Path(settings.VAR_DIR)
    if folder.name == f"test-{os.getpid()}":
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    call_command("migrate", verbosity=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gpus", type=int, default=10240)
    parser.add_argument("--days", type=float, default=30)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--seeds", type=int, default=20, help="detection-quality clusters")
    parser.add_argument(
        "--scale-gpus",
        default="10240,102400",
        help="fleet sizes of the scale part (tests/bench/scale.py), comma-separated; '' skips it",
    )
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    django_ready(url)
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from apps.accounts.services import user_create_or_update
    from apps.jobs.models import Job, JobMetric
    from tests.bench.timing import median_ms, raw_write_seconds

    print(f"KUAE Ops bench — {connection.vendor} ({url.rsplit('@', 1)[-1]})\n")

    # 1. simulate, against a raw bulk write of the same step samples.
    start = time.perf_counter()
    call_command(
        "simulate",
        gpus=args.gpus,
        days=args.days,
        seed=1,
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    simulate_s = time.perf_counter() - start
    rows = list(
        JobMetric.objects.values_list("job_id", "ts", "step", "step_time_s", "tokens_per_s")
    )
    copy_s = raw_write_seconds(
        "job_id bigint, ts timestamptz, step bigint, step_time_s float8, tokens_per_s float8", rows
    )
    print(
        f"simulate --gpus {args.gpus} --days {args.days:g}: {simulate_s:.1f} s "
        f"({len(rows):,} step samples and the rest)"
    )
    print(
        f"  baseline: raw bulk write of those {len(rows):,} samples alone: {copy_s:.1f} s "
        f"→ simulate = {simulate_s / copy_s:.1f}× that\n"
    )

    # 2. Page server times, against /healthz through the same client.
    user = user_create_or_update(username="bench", role="manager")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    flagship = Job.objects.get(external_id="sim-0")
    pages = [
        ("baseline /healthz", "/healthz"),
        ("overview", "/"),
        ("nodes list", "/nodes/"),
        ("nodes, filtered", "/nodes/?state=healthy&rack=r010"),
        ("node detail", "/nodes/r010n03/"),
        ("jobs list", "/jobs/"),
        ("job detail", f"/jobs/{flagship.pk}/"),
        ("job chart data", f"/charts/jobs/{flagship.pk}/progress.json"),
        ("API job metrics", f"/api/v1/jobs/{flagship.pk}/metrics/"),
        ("API nodes, 1,000", "/api/v1/nodes/?page_size=1000"),
    ]
    print(f"{'page':<22}{'median ms':>10}{'queries':>9}{'× baseline':>12}   goal")
    base_ms = None
    for label, path in pages:

        def get(path: str = path) -> int:
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)
            return len(response.content)

        ms = median_ms(get, args.repeat)
        with CaptureQueriesContext(connection) as queries:
            get()
        base_ms = base_ms or ms
        goal = (
            ""
            if label.startswith("baseline")
            else ("≤ 200 ms" if "API" in label or "chart" in label else "≤ 150 ms, ≤ 20 queries")
        )
        print(f"{label:<22}{ms:>10.1f}{len(queries):>9}{ms / base_ms:>11.1f}×   {goal}")
    print(
        f"\nflagship job: {flagship.gpu_count:,} GPUs, "
        f"{JobMetric.objects.filter(job=flagship).count():,} job-wide samples"
    )
    from apps.accounts.services import token_issue
    from tests.bench.intake import bench_intake

    agent = user_create_or_update(username="bench-agent", role="agent")
    bench_intake(token_issue(user=agent), client)
    from tests.bench.stalls import bench_stalls

    bench_stalls(token_issue(user=agent))
    from tests.bench.ports import bench_fabric_check, bench_ports

    ports_token = token_issue(user=agent)
    counters = bench_ports(ports_token)
    bench_fabric_check(ports_token, counters)
    from tests.bench.health import bench_health

    bench_health()
    from tests.bench.queues import bench_queues

    bench_queues()
    from tests.bench.weekly import bench_weekly

    bench_weekly(client, args.repeat)
    from tests.bench.incidents import bench_incidents

    bench_incidents(client)
    from tests.bench.slurm import bench_slurm

    bench_slurm()
    from tests.bench.slurm_sync import bench_slurm_sync

    bench_slurm_sync()
    from tests.bench.detection import bench_detection

    bench_detection(args.seeds)
    from tests.bench.reporter import bench_reporter

    bench_reporter()
    from tests.bench.partitions import bench_partitions

    bench_partitions()
    if args.scale_gpus:
        from django.db import connections

        from tests.bench.scale import bench_scale
        from tests.bench.scale import parser as scale_parser

        connections.close_all()  # each size recreates the bench database
        sizes = [int(n) for n in args.scale_gpus.split(",") if n.strip()]
        bench_scale(url, sizes, scale_parser().parse_args([]))


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main()
