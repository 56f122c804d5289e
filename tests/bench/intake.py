"""Intake benchmarks (issue 3): telemetry sweep, Prometheus text, scrape round, job metrics."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from apps.fleet.models import Node
from apps.jobs.intake import MetricSample
from apps.jobs.models import Job
from apps.jobs.services import job_create, job_metrics_ingest
from apps.telemetry.prometheus import parse_dcgm
from apps.telemetry.services import scrape_nodes
from tests.bench.timing import median_ms, raw_write_seconds
from tests.support import DCGM_SAMPLE, closed_port

METRICS = (
    "gpu_util",
    "mem_used_mib",
    "temp_c",
    "mem_temp_c",
    "power_w",
    "sm_clock_mhz",
    "xid",
    "ecc_sbe_total",
    "ecc_dbe_total",
    "tensor_active",
    "nvlink_bw_total",
    "gemm_tflops",
)


def _metrics(rng: random.Random, ts: dt.datetime) -> dict[str, float]:
    """What a busy H100 reports: gauges that move, counters that only grow, no XID."""
    return {
        "gpu_util": rng.randint(93, 100),
        "mem_used_mib": rng.randint(70_000, 79_000),
        "temp_c": rng.randint(55, 78),
        "mem_temp_c": rng.randint(60, 80),
        "power_w": round(rng.uniform(550, 690), 1),
        "sm_clock_mhz": 1980,
        "xid": 0,
        "ecc_sbe_total": 2,
        "ecc_dbe_total": 0,
        "tensor_active": round(rng.uniform(0.35, 0.55), 3),
        "nvlink_bw_total": int((ts.timestamp() - 1.7e9) * 3e11),
        "gemm_tflops": round(rng.gauss(720, 6), 1),
    }


def _sweep_bodies(
    hosts: list[str], ts: dt.datetime, nodes_per_post: int, rng: random.Random
) -> list[str]:
    stamp = ts.isoformat().replace("+00:00", "Z")
    bodies = []
    for i in range(0, len(hosts), nodes_per_post):
        samples = [
            {
                "node": h,
                "gpu": g,
                "ts": stamp,
                "metrics": _metrics(rng, ts),
            }
            for h in hosts[i : i + nodes_per_post]
            for g in range(8)
        ]
        bodies.append(json.dumps({"samples": samples}))
    return bodies


def _copy_baseline(hosts: list[str], ts: dt.datetime, rng: random.Random) -> float:
    """Seconds to COPY the same (node, gpu, ts, metric, value) values into an unindexed
    table: the floor the sweep is measured against."""
    rows = [(h, g, ts, m, rng.uniform(1, 100)) for h in hosts for g in range(8) for m in METRICS]
    return raw_write_seconds("node text, gpu int, ts timestamptz, metric text, value float8", rows)


class Sweep(NamedTuple):
    """One telemetry sweep's figures."""

    per_post: int  # nodes per request
    requests: int
    seconds: float
    copy_s: float  # COPY of the same values into an unindexed table, just before
    queries: int  # SQL statements of the last request
    request_ms: float  # median request time


def bench_sweep(
    client: Client, hosts: list[str], rng: random.Random, per_posts: tuple[int, ...] = (128, 64, 1)
) -> list[Sweep]:
    """One telemetry sweep of every GPU of `hosts` per entry of `per_posts` (nodes per
    request), each against a COPY of the same values into an unindexed table measured just
    before it. Prints and returns each sweep's figures."""
    values = len(hosts) * 8 * len(METRICS)
    print(
        f"\nTelemetry sweep: {len(hosts) * 8:,} GPUs × {len(METRICS)} metrics = {values:,} values"
        "   goal ≤ 0.5 s and ≤ 6× the COPY (128 nodes per request)"
    )
    out = []
    for per_post in per_posts:
        copy_s = _copy_baseline(hosts, dt.datetime.now(dt.UTC), rng)
        bodies = _sweep_bodies(hosts, dt.datetime.now(dt.UTC), per_post, rng)
        times = []
        start = time.perf_counter()
        for body in bodies[:-1]:
            response = client.post(
                "/api/v1/ingest/telemetry/", body, content_type="application/json"
            )
            assert response.status_code == 202, response.content[:300]
            times.append(time.perf_counter())
        with CaptureQueriesContext(connection) as queries:
            response = client.post(
                "/api/v1/ingest/telemetry/", bodies[-1], content_type="application/json"
            )
        assert response.status_code == 202, response.content[:300]
        times.append(time.perf_counter())
        took = times[-1] - start
        each = [b - a for a, b in itertools.pairwise([start, *times])]
        print(
            f"  {per_post:>3} node(s) per request ({len(bodies):>4} requests): {took:6.2f} s, "
            f"{values / took:>9,.0f} values/s; COPY of the same values {copy_s * 1000:4.0f} ms "
            f"→ {took / copy_s:5.1f}× the COPY; {len(queries)} queries per request"
        )
        out.append(
            Sweep(per_post, len(bodies), took, copy_s, len(queries), statistics.median(each) * 1000)
        )
    return out


def bench_intake(agent_token: str, reader: Client) -> None:
    """Print the intake figures."""
    rng = random.Random(7)
    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Token {agent_token}")
    hosts = list(Node.objects.order_by("hostname").values_list("hostname", flat=True))
    # The first sweep after simulate is cold: a new process, and every GPU's counters differ
    # from the simulated ones (an event per GPU); the second is the steady state.
    bench_sweep(client, hosts, rng, (128, 128, 64, 1))

    text = DCGM_SAMPLE.read_text()
    parse_ms = median_ms(lambda: parse_dcgm(text, ts=dt.datetime.now(dt.UTC), node=hosts[0]), 20)
    post_ms = median_ms(
        lambda: client.post(
            f"/api/v1/ingest/prometheus/?node={hosts[0]}", text, content_type="text/plain"
        ),
        20,
    )
    print(
        f"\nPrometheus text of one 8-GPU node ({len(text):,} bytes): "
        f"parsed and stored in {post_ms:.1f} ms"
        f"   goal ≤ 15 ms\n  baseline: parsing alone {parse_ms:.1f} ms → storing adds "
        f"{post_ms - parse_ms:.1f} ms"
    )

    # The exporter runs in a process of its own, as real exporters run on other machines.
    folder = tempfile.mkdtemp()
    shutil.copy(DCGM_SAMPLE, f"{folder}/metrics")
    port = closed_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "http.server",
            str(port),
            "--bind",
            "127.0.0.1",
            "--directory",
            folder,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for_port(port)
    try:
        Node.objects.update(exporter_url=f"http://127.0.0.1:{port}/metrics")
        ids = list(Node.objects.order_by("pk").values_list("pk", flat=True))
        start = time.perf_counter()
        up = 0
        for i in range(0, len(ids), 64):
            up += scrape_nodes(node_ids=ids[i : i + 64])["up"]
        took = time.perf_counter() - start
        print(
            f"\nScrape round, {len(ids):,} exporters (one loopback server process), chunks of 64 "
            "in one "
            f"worker: {took:.1f} s, {up:,} up   goal within the 30 s interval"
        )
    finally:
        Node.objects.update(exporter_url="")
        server.terminate()
        server.wait()
        shutil.rmtree(folder)

    cluster = Node.objects.first().cluster
    job, _ = job_create(
        cluster=cluster,
        name="bench-500k",
        n_params=70e9,
        gpu_count=1024,
        status="running",
        started_at=dt.datetime.now(dt.UTC) - dt.timedelta(days=30),
    )
    start_ts = dt.datetime.now(dt.UTC) - dt.timedelta(days=30)
    samples = [
        MetricSample(
            start_ts + dt.timedelta(seconds=5 * i),
            i,
            5.0,
            4.2e5 * (1 + rng.gauss(0, 0.02)),
            2.0,
            0.5,
            None,
            None,
        )
        for i in range(518_400)
    ]
    start = time.perf_counter()
    for i in range(0, len(samples), 50_000):
        job_metrics_ingest(job=job, samples=samples[i : i + 50_000])
    ingest_s = time.perf_counter() - start
    get_ms = median_ms(lambda: reader.get(f"/api/v1/jobs/{job.pk}/metrics/"), 7)
    with connection.cursor() as cursor:
        raw_ms = median_ms(
            lambda: (
                cursor.execute(
                    "SELECT ts, step, step_time_s, tokens_per_s, loss FROM jobs_jobmetric "
                    "WHERE job_id = %s "
                    "ORDER BY ts",
                    [job.pk],
                ),
                cursor.fetchall(),
            ),
            5,
        )
    print(
        f"\nJob metrics: {len(samples):,} samples (30 days at 5 s) ingested in {ingest_s:.1f} s; "
        f"GET metrics (≤ 2,000 points): {get_ms:.0f} ms   goal ≤ 200 ms\n"
        f"  baseline: raw SELECT of those rows {raw_ms:.0f} ms → "
        f"{get_ms / raw_ms:.2f}× with downsampling and JSON"
    )
    Job.objects.filter(pk=job.pk).delete()


def _wait_for_port(port: int, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")
