"""One fleet size of the scale bench, measured in the process's fresh bench database: the
fleet built fast, then every scheduled check, the pages, and a telemetry sweep."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.accounts.services import token_issue, user_create_or_update
from apps.common.tasks import ensure_partitions
from apps.fleet.models import GPU, Cluster, Node
from apps.health.checks import SCHEDULED_KINDS
from apps.health.services import detect, limits_for, runs_execute_now
from apps.incidents.models import Incident
from apps.jobs.models import Job, JobMetric, NodeStepMetric
from apps.simulator.plan import make_plan
from apps.simulator.writer import write_plan
from tests.bench.intake import bench_sweep
from tests.bench.prometheus_scale import prometheus_measure
from tests.bench.timing import median_ms

CLUSTER = "kuae-scale"


@dataclass
class Figure:
    """A measured figure and the SQL statements behind it (None where none are counted)."""

    value: float
    queries: int | None = None


@dataclass
class SizeFigures:
    """Everything measured at one fleet size; each part is label → figure, in print order."""

    gpus: int
    nodes: int = 0
    build: dict[str, float] = field(default_factory=dict)
    sweep: dict[str, Figure] = field(default_factory=dict)
    first: dict[str, Figure] = field(default_factory=dict)
    checks: dict[str, Figure] = field(default_factory=dict)
    detect: dict[str, Figure] = field(default_factory=dict)
    findings: dict[str, dict[str, int]] = field(default_factory=dict)
    pages: dict[str, Figure] = field(default_factory=dict)
    prometheus: dict[str, Figure] = field(default_factory=dict)


def fleet_build(gpus: int, *, days: float, failure_rate: float, out: SizeFigures) -> Cluster:
    """The simulator's plan over `days` written through the services, with each GPU's
    telemetry history as `manage.py simulate` writes it (two hours of 5-minute samples before
    its latest, through the intake): racks,
    leaf switches and PDUs, a flagship job on three quarters of the nodes and lanes of
    smaller ones with their recent job-wide and per-node samples (a straggler, a hang),
    incidents and state changes. Then, as in production, each day's samples go to their
    day's partition (where the tables are partitioned) and the tables are analysed."""
    start = time.perf_counter()
    plan = make_plan(
        gpus=gpus,
        days=days,
        seed=1,
        end=timezone.now().replace(microsecond=0),
        failure_rate=failure_rate,
    )
    cluster = write_plan(plan, cluster_name=CLUSTER, interval_s=60, log=lambda m: print(f"  {m}"))
    out.build["written, s"] = time.perf_counter() - start
    ensure_partitions()  # as beat does hourly: the days' rows out of DEFAULT, if partitioned
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    out.build["total, s"] = time.perf_counter() - start
    out.nodes = Node.objects.filter(cluster=cluster).count()
    out.build["GPUs"] = GPU.objects.filter(node__cluster=cluster).count()
    out.build["running jobs"] = Job.objects.filter(cluster=cluster, status="running").count()
    out.build["job-wide samples"] = JobMetric.objects.count()
    out.build["per-node samples"] = NodeStepMetric.objects.count()
    out.build["incidents"] = Incident.objects.filter(cluster=cluster).count()
    return cluster


def checks_measure(cluster: Cluster, out: SizeFigures) -> None:
    """Every scheduled kind through the real service: each kind's first run after the fleet
    appears (every result and incident created), then each kind alone in steady state, timed
    with its SQL statements counted; and each kind's detection alone (loading what it reads
    and judging, nothing stored)."""
    first = 0.0
    for kind in SCHEDULED_KINDS:
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            (run,) = runs_execute_now(cluster=cluster, kinds=[kind], requested_by="bench")
            took = time.perf_counter() - start
        first += took
        label = kind if run.status == "done" else f"{kind} ({run.status}: {run.error[:60]})"
        out.first[label] = Figure(took * 1000, len(queries))
    out.first["all kinds, first run"] = Figure(first * 1000)
    now, limits = timezone.now(), limits_for(cluster)
    for kind in SCHEDULED_KINDS:
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            detect(kind, cluster, now, limits)
            took = time.perf_counter() - start
        out.detect[kind] = Figure(took * 1000, len(queries))
    for kind in SCHEDULED_KINDS:
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            (run,) = runs_execute_now(cluster=cluster, kinds=[kind], requested_by="bench")
            took = time.perf_counter() - start
        label = kind if run.status == "done" else f"{kind} ({run.status}: {run.error[:60]})"
        out.checks[label] = Figure(took * 1000, len(queries))
        out.findings[kind] = dict(run.counts or {})
    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        runs_execute_now(cluster=cluster, kinds=list(SCHEDULED_KINDS), requested_by="bench")
        took = time.perf_counter() - start
    out.checks["all kinds, one sweep"] = Figure(took * 1000, len(queries))


def pages(cluster: Cluster) -> list[tuple[str, str]]:
    """(label, path) of the pages measured, the /healthz baseline first."""
    flagship = Job.objects.get(cluster=cluster, external_id="sim-0")
    node = flagship.nodes.order_by("hostname").values_list("hostname", flat=True)[40]
    name = cluster.name
    return [
        ("baseline /healthz", "/healthz"),
        ("overview", "/"),
        ("nodes list", "/nodes/"),
        ("nodes, filtered", "/nodes/?state=healthy&rack=r010"),
        ("node detail", f"/nodes/{node}/"),
        ("jobs list", "/jobs/"),
        ("job detail (flagship)", f"/jobs/{flagship.pk}/"),
        ("GPU fleet", f"/gpus/?cluster={name}"),
        ("topology", f"/topology/?cluster={name}"),
        ("health", f"/health/?cluster={name}"),
        ("incidents list", "/incidents/"),
        ("reliability", "/reliability/"),
        ("weekly report", "/reports/weekly/"),
        ("API nodes, first page", "/api/v1/nodes/"),
        ("API nodes, 1,000", "/api/v1/nodes/?page_size=1000"),
    ]


def pages_measure(client: Client, cluster: Cluster, repeat: int, out: SizeFigures) -> None:
    """Server time (median of `repeat` after a warm-up) and SQL statements of each page."""
    for label, path in pages(cluster):

        def get(path: str = path) -> int:
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)
            return len(response.content)

        ms = median_ms(get, repeat)
        with CaptureQueriesContext(connection) as queries:
            get()
        out.pages[label] = Figure(ms, len(queries))


def sweep_measure(client: Client, out: SizeFigures) -> None:
    """Two telemetry sweeps of every GPU through the HTTP API, 128 nodes per request: the
    first turns the built values into the agents' (an event for most GPUs), the second is
    the steady state, each against a COPY of the same values measured just before it."""
    hosts = list(Node.objects.order_by("hostname").values_list("hostname", flat=True))
    cold, steady = bench_sweep(client, hosts, random.Random(7), (128, 128))
    out.sweep["sweep, s"] = Figure(steady.seconds, steady.queries)
    out.sweep["requests"] = Figure(steady.requests)
    out.sweep["per request (median), ms"] = Figure(steady.request_ms, steady.queries)
    out.sweep["baseline: COPY of the same values, s"] = Figure(steady.copy_s)
    out.sweep["sweep ÷ COPY"] = Figure(steady.seconds / steady.copy_s)
    out.sweep["first sweep (events for most GPUs), s"] = Figure(cold.seconds, cold.queries)


def prometheus_part(cluster: Cluster, out: SizeFigures) -> None:
    """The cluster reading its telemetry from a real Prometheus (prometheus_scale.py)."""
    figures: dict[str, tuple[float, int | None]] = {}
    prometheus_measure(cluster, figures)
    out.prometheus = {label: Figure(value, queries) for label, (value, queries) in figures.items()}


def measure_size(gpus: int, *, days: float, failure_rate: float, repeat: int) -> SizeFigures:
    """Build a fleet of `gpus` in the (fresh) database Django is set up on and measure it:
    checks and pages first, on the fleet as built; then the sweep, as its values replace
    the built ones (the hot GPU, the slow GPU) the checks judge; then the same fleet read
    from a real Prometheus."""
    out = SizeFigures(gpus)
    print(f"\n{gpus:,} GPUs: building", flush=True)
    cluster = fleet_build(gpus, days=days, failure_rate=failure_rate, out=out)
    reader = Client(HTTP_HOST="127.0.0.1")
    reader.force_login(user_create_or_update(username="bench", role="manager"))
    agent = user_create_or_update(username="bench-agent", role="agent")
    writer = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Token {token_issue(user=agent)}")
    for part, run in (
        ("checks", lambda: checks_measure(cluster, out)),
        ("pages", lambda: pages_measure(reader, cluster, repeat, out)),
        ("sweep", lambda: sweep_measure(writer, out)),
        ("Prometheus", lambda: prometheus_part(cluster, out)),
    ):
        start = time.perf_counter()
        run()
        out.build[f"{part} measured in, s"] = time.perf_counter() - start
        print(f"{gpus:,} GPUs: {part} measured in {out.build[f'{part} measured in, s']:.1f} s")
    return out
