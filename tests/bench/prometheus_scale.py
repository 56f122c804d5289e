"""Prometheus as the telemetry source at fleet scale, part of the scale bench: a real
Prometheus (Debian's `prometheus`) scrapes fake dcgm-exporters serving every GPU of the
built fleet — the dcgm fields KUAE reads, labelled as dcgm-exporter labels them, 128 nodes
per scrape target. Then, measured: the answer to each check's query (seconds, MB, series)
beside the one query every pull asked before; a pull of every field through KUAE (ask,
read, store); and `heartbeat`, `gpu_errors` and `thermal`, each run as beat runs it with the
cluster's `prometheus_url` set, with the queries each asks.

Where the binary is absent the part prints why and measures nothing (`make bench` is not
CI; the tests against a real Prometheus are tests/health/test_prometheus_real.py)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import orjson
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from apps.fleet.models import GPU, Cluster
from apps.health.services import PULLED_METRICS, runs_execute_now
from apps.telemetry.exporters import series_for
from apps.telemetry.names import DCGM_FIELDS
from apps.telemetry.prometheus_source import SourceDown, prometheus_pull
from apps.telemetry.promql import dcgm_query
from tests.support import LoopbackServer, QuietHandler, closed_port, reply

NODES_PER_TARGET = 128
# The checks that pull GPU series before they run (the fabric's NIC ports and the host
# checks' host kinds are node_exporter's: not here).
GPU_PULLING = sorted(k for k in PULLED_METRICS if series_for(PULLED_METRICS[k]))
SCRAPE_INTERVAL_S = 30  # ample for a target of 128 nodes on a busy 2-core machine
DRIVER = "570.124.06"
# A plausible value per field (the hot GPU and the XIDs are the tests' business).
VALUES = {
    "DCGM_FI_DEV_GPU_UTIL": 97,
    "DCGM_FI_DEV_FB_USED": 61234,
    "DCGM_FI_DEV_GPU_TEMP": 61,
    "DCGM_FI_DEV_MEMORY_TEMP": 58,
    "DCGM_FI_DEV_POWER_USAGE": 612.4,
    "DCGM_FI_DEV_SM_CLOCK": 1980,
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.41,
}


def exposition(rows: list[tuple[str, int, str, str, str]]) -> bytes:
    """dcgm-exporter text for `rows` of (hostname, gpu index, uuid, model, pci bus): every
    field KUAE reads (the renamed throttle field once), grouped by field as the exporter
    writes it."""
    fields = [f for f in DCGM_FIELDS if f != "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"]
    out = []
    for name in fields:
        out.append(f"# TYPE {name} gauge")
        value = VALUES.get(name, 0)
        for host, index, uuid, model, bus in rows:
            out.append(
                f'{name}{{gpu="{index}",UUID="{uuid}",pci_bus_id="0000{bus or "0000:00:00.0"}",'
                f'device="nvidia{index}",modelName="{model}",Hostname="{host}",'
                f'DCGM_FI_DRIVER_VERSION="{DRIVER}"}} {value}'
            )
    return ("\n".join(out) + "\n").encode()


@contextmanager
def exporters(cluster: Cluster) -> Iterator[tuple[list[str], int]]:
    """One loopback HTTP server answering /t/<k>/metrics for each group of 128 nodes:
    yields the scrape targets (host:port/path) and the series they expose in all."""
    rows = list(
        GPU.objects.filter(node__cluster=cluster)
        .order_by("node__hostname", "index")
        .values_list("node__hostname", "index", "uuid", "model", "pci_bus")
    )
    rows = [(h, i, u or f"GPU-{h}-{i}", m or "NVIDIA H100 80GB HBM3", b) for h, i, u, m, b in rows]
    per_target = NODES_PER_TARGET * 8
    texts = [exposition(rows[k : k + per_target]) for k in range(0, len(rows), per_target)]
    series = sum(t.count(b"\n") - t.count(b"# TYPE") for t in texts)

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            reply(self, 200, texts[int(self.path.split("/")[2])], "text/plain; version=0.0.4")

    with LoopbackServer(Handler) as server:
        yield [f"{server.address}/t/{k}/metrics" for k in range(len(texts))], series


@contextmanager
def prometheus(binary: str, targets: list[str]) -> Iterator[str]:
    """Prometheus on a free loopback port scraping `targets`; yields its URL."""
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        jobs = "\n".join(
            f"  - job_name: t{k}\n    metrics_path: /{path.split('/', 1)[1]}\n"
            f"    static_configs: [{{targets: ['{path.split('/', 1)[0]}']}}]"
            for k, path in enumerate(targets)
        )
        (base / "prometheus.yml").write_text(
            f"global:\n  scrape_interval: {SCRAPE_INTERVAL_S}s\n"
            f"  scrape_timeout: {SCRAPE_INTERVAL_S - 5}s\nscrape_configs:\n{jobs}\n"
        )
        port = closed_port()
        log = base / "prometheus.log"
        with log.open("w") as out:
            process = subprocess.Popen(
                [
                    binary,
                    f"--config.file={base / 'prometheus.yml'}",
                    f"--storage.tsdb.path={base / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _scalar(url: str, query: str) -> float:
    """The value of a one-series instant query; 0 when it answers nothing (or not yet)."""
    try:
        answer = httpx.post(f"{url}/api/v1/query", data={"query": query}, timeout=30).json()
        result = answer["data"]["result"]
        return float(result[0]["value"][1]) if result else 0.0
    except (httpx.HTTPError, ValueError, KeyError):
        return 0.0


def _wait_scraped(url: str, series: int, limit_s: float = 600) -> float:
    """Seconds until Prometheus holds every exposed series (one scrape of every target)."""
    start = time.perf_counter()
    while time.perf_counter() - start < limit_s:
        held = _scalar(url, 'count({__name__=~"DCGM_FI_.+"})')
        if held >= series:
            return time.perf_counter() - start
        time.sleep(2)
    raise RuntimeError(f"Prometheus held fewer than {series:,} series after {limit_s:.0f} s")


def _answered(url: str) -> tuple[float, float]:
    """How many instant queries the server has answered and the bytes it sent back for
    them (compressed), from its own /metrics (reading which is no query)."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    requests = sent = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("handler") != "/api/v1/query":
                continue
            if sample.name == "prometheus_http_requests_total":
                requests += sample.value
            elif sample.name == "prometheus_http_response_size_bytes_sum":
                sent += sample.value
    return requests, sent


def _ask(url: str, query: str) -> tuple[float, float, int]:
    """One instant query straight to the server: seconds (evaluated, sent, decoded from
    JSON), the answer's size in MB once decompressed (what KUAE_PROMETHEUS_MAX_BYTES
    bounds) and its series."""
    start = time.perf_counter()
    response = httpx.post(
        f"{url}/api/v1/query", data={"query": query, "time": f"{time.time():.3f}"}, timeout=300
    )
    series = len(orjson.loads(response.content)["data"]["result"])
    return time.perf_counter() - start, len(response.content) / 1e6, series


def prometheus_measure(cluster: Cluster, out: dict[str, tuple[float, int | None]]) -> None:
    """Fill `out` (label → (value, SQL statements or None)): the answers to the pulls' queries
    (and to the one query every pull asked before), a pull of every field through KUAE,
    and the three telemetry checks' runs with the cluster reading its Prometheus."""
    binary = shutil.which("prometheus") or "/usr/bin/prometheus"
    if not Path(binary).exists():
        print("  Prometheus part skipped: no prometheus binary (apt-get install prometheus)")
        return
    with (
        exporters(cluster) as (targets, series),
        prometheus(binary, targets) as url,
        override_settings(KUAE_SCRAPE_ALLOW=["127.0.0.0/8"]),
    ):
        out["series exposed"] = (series, None)
        out["scrape targets"] = (len(targets), None)
        out["first full scrape, s"] = (_wait_scraped(url, series), None)
        names = "|".join(sorted(DCGM_FIELDS))
        queries = {
            "every field, every label on each (as before)": (
                "max by (__name__, Hostname, hostname, gpu, UUID, modelName, pci_bus_id) "
                f'({{__name__=~"{names}"}})'
            ),
            "every field, the identity on one": dcgm_query(),
        } | {
            f"{kind}'s fields": dcgm_query(series_for(PULLED_METRICS[kind])) for kind in GPU_PULLING
        }
        for label, query in queries.items():
            seconds, mb, answered = _ask(url, query)
            out[f"query: {label}, s"] = (seconds, None)
            out[f"query: {label}, MB / series"] = (mb, answered)
        cluster.prometheus_url = url
        cluster.save(update_fields=["prometheus_url"])
        try:
            start = time.perf_counter()
            # The reference pull of every field may take longer than a check's may (30 s);
            # the checks below run with the settings production has.
            with (
                CaptureQueriesContext(connection) as sql,
                override_settings(KUAE_PROMETHEUS_PULL_TIMEOUT_S=300),
            ):
                try:
                    result, _, _ = prometheus_pull(cluster, now=timezone.now())
                except SourceDown as down:
                    print(f"  the pull failed: {down}")
                    result = None
            took = time.perf_counter() - start
            out["pull of every field: ask, read, store, s"] = (took, len(sql))
            out["pull of every field: GPUs stored"] = (result.accepted if result else 0, None)
            for kind in GPU_PULLING:
                asked = _answered(url)[0]
                start = time.perf_counter()
                with CaptureQueriesContext(connection) as sql:
                    (run,) = runs_execute_now(cluster=cluster, kinds=[kind], requested_by="bench")
                label = f"{kind} run, s" + ("" if run.status == "done" else f" ({run.status})")
                out[label] = (time.perf_counter() - start, len(sql))
                out[f"{kind} run, queries to Prometheus"] = (_answered(url)[0] - asked, None)
                if run.status != "done":
                    print(f"  {kind}: {run.status}: {run.error[:200]}")
        finally:
            cluster.prometheus_url = ""
            cluster.save(update_fields=["prometheus_url"])
