"""Incidents benchmark (issue 5): reliability over 5,000 incidents, the incident list."""

from __future__ import annotations

import datetime as dt
import random

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.incidents.models import Incident
from apps.simulator.mix import weighted_categories
from tests.bench.timing import median_ms


def _add_incidents(cluster: Cluster, count: int) -> None:
    rng = random.Random(5)
    now = timezone.now()
    nodes = list(Node.objects.filter(cluster=cluster).values_list("pk", flat=True))
    categories, weights = weighted_categories()
    rows = []
    for _ in range(count):
        at = now - dt.timedelta(seconds=rng.uniform(0, 30 * 86400))
        rows.append(
            Incident(
                cluster=cluster,
                title="bench",
                category=rng.choices(categories, weights)[0],
                severity="sev2",
                status="resolved",
                occurred_at=at,
                detected_at=at + dt.timedelta(seconds=60),
                localized_at=at + dt.timedelta(seconds=400),
                recovered_at=at + dt.timedelta(seconds=2400),
                interrupts_job=True,
                planned=rng.random() < 0.1,
                lost_gpu_hours=rng.uniform(0, 5000),
                source="simulator",
            )
        )
    Incident.objects.bulk_create(rows, batch_size=2000)
    through = Incident.nodes.through
    through.objects.bulk_create(
        [through(incident_id=i.pk, node_id=rng.choice(nodes)) for i in rows], batch_size=5000
    )


def bench_incidents(client: Client) -> None:
    """Print the figures."""
    cluster = Cluster.objects.get(name="kuae-sim")
    _add_incidents(cluster, 5000 - Incident.objects.filter(cluster=cluster).count())
    total = Incident.objects.filter(cluster=cluster).count()
    print(f"\nIncidents: {total:,} over 30 days")
    for label, path, goal in (
        ("baseline /healthz", "/healthz", ""),
        ("API reliability, 30 days", "/api/v1/reports/reliability/?cluster=kuae-sim", "≤ 200 ms"),
        ("incident list page", "/incidents/", "≤ 150 ms, ≤ 20 queries"),
        ("incident list by cost", "/incidents/?sort=-cost", "≤ 150 ms, ≤ 20 queries"),
        ("API incidents, 100", "/api/v1/incidents/?cluster=kuae-sim&page_size=100", ""),
        ("reliability page", "/reliability/", ""),
    ):

        def get(path: str = path) -> None:
            assert client.get(path).status_code == 200, path

        ms = median_ms(get)
        with CaptureQueriesContext(connection) as queries:
            get()
        print(f"  {label:<28}{ms:>8.1f} ms {len(queries):>4} queries   {goal}")
