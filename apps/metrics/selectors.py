"""What `/metrics` reports, read from the database at scrape time: the fleet by state, open
incidents, unrouted Alertmanager alerts, running jobs, the age of each check's last run.

This app sits above the others (it reads the fleet, jobs, incidents and health apps, and
none of them imports it): the dashboard's own state, exposed for Prometheus.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count, Max, Sum
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric

from apps.fleet.models import Node
from apps.health.models import CheckRun
from apps.health.pipeline import pipeline_status
from apps.incidents.choices import ACTIVE_STATUSES
from apps.incidents.models import Incident, UnroutedAlert
from apps.jobs.choices import JobStatus
from apps.jobs.models import Job


class FleetCollector:
    """Gauges computed from the database on each scrape (a handful of grouped queries)."""

    def collect(self) -> Iterator[Metric]:
        """The gauges, read now."""
        nodes = GaugeMetricFamily(
            "kuae_nodes", "Nodes by cluster and state", labels=["cluster", "state"]
        )
        gpus = GaugeMetricFamily(
            "kuae_gpus", "GPUs by cluster and node state", labels=["cluster", "state"]
        )
        for row in Node.objects.values("cluster__name", "state").annotate(
            n=Count("id"), g=Sum("gpu_count")
        ):
            nodes.add_metric([row["cluster__name"], row["state"]], row["n"])
            gpus.add_metric([row["cluster__name"], row["state"]], row["g"] or 0)
        yield nodes
        yield gpus
        incidents = GaugeMetricFamily(
            "kuae_open_incidents",
            "Open incidents by cluster and severity",
            labels=["cluster", "severity"],
        )
        for open_row in (
            Incident.objects.filter(status__in=ACTIVE_STATUSES)
            .values("cluster__name", "severity")
            .annotate(n=Count("id"))
        ):
            incidents.add_metric([open_row["cluster__name"], open_row["severity"]], open_row["n"])
        yield incidents
        unrouted = GaugeMetricFamily(
            "kuae_unrouted_alerts",
            "Alertmanager alerts kept without an incident (no known node or cluster), by status",
            labels=["status"],
        )
        by_status = dict(
            UnroutedAlert.objects.values_list("status").annotate(n=Count("id")).order_by()
        )
        for status in UnroutedAlert.Status.values:
            unrouted.add_metric([status], by_status.get(status, 0))
        yield unrouted
        jobs = GaugeMetricFamily("kuae_running_jobs", "Running jobs by cluster", labels=["cluster"])
        for job_row in (
            Job.objects.filter(status=JobStatus.RUNNING)
            .values("cluster__name")
            .annotate(n=Count("id"))
        ):
            jobs.add_metric([job_row["cluster__name"]], job_row["n"])
        yield jobs
        age = GaugeMetricFamily(
            "kuae_check_last_run_age_seconds",
            "Seconds since each check kind last finished, by cluster",
            labels=["cluster", "kind"],
        )
        now = timezone.now()
        for run_row in (
            CheckRun.objects.filter(status="done")
            .values("cluster__name", "kind")
            .annotate(last=Max("started_at"))
        ):
            if run_row["last"] is not None:
                age.add_metric(
                    [run_row["cluster__name"], run_row["kind"]],
                    (now - run_row["last"]).total_seconds(),
                )
        yield age
        yield from _pipeline_gauges()


def _pipeline_gauges() -> Iterator[Metric]:
    """`kuae_pipeline_part_age_seconds` and `kuae_pipeline_part_ok` per part and cluster
    (docs/operations.md, Watching the watcher); a part that never worked has no age sample."""
    age = GaugeMetricFamily(
        "kuae_pipeline_part_age_seconds",
        "Seconds since each of KUAE's own parts last worked",
        labels=["part", "cluster"],
    )
    ok = GaugeMetricFamily(
        "kuae_pipeline_part_ok",
        "1 while the part is within its limit (twice its interval), else 0",
        labels=["part", "cluster"],
    )
    for part in pipeline_status().parts:
        labels = [part.name, part.cluster or ""]
        if part.age_s is not None:
            age.add_metric(labels, part.age_s)
        ok.add_metric(labels, 1.0 if part.ok else 0.0)
    yield age
    yield ok
