"""`/metrics`: the dashboard's own state for Prometheus (fleet by state, open incidents,
unrouted Alertmanager alerts, running jobs, age of each check's last run), read from the
database at scrape time.

Not public: a scraper sends `Authorization: Bearer KUAE_METRICS_TOKEN` (or an admin's API
token), or an admin is signed in; KUAE_PUBLIC_METRICS is not offered on purpose — the token
is the switch.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator

from django.conf import settings
from django.db.models import Count, Max, Sum
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from rest_framework.exceptions import AuthenticationFailed

from apps.accounts.authentication import user_for_token
from apps.accounts.choices import ADMINS
from apps.fleet.models import Node
from apps.health.models import CheckRun
from apps.incidents.choices import ACTIVE_STATUSES
from apps.incidents.models import Incident, UnroutedAlert
from apps.jobs.choices import JobStatus
from apps.jobs.models import Job


class FleetCollector:
    """Gauges computed from the database on each scrape (a handful of grouped queries)."""

    def collect(self) -> Iterator[Metric]:
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
        for row in (
            Incident.objects.filter(status__in=ACTIVE_STATUSES)
            .values("cluster__name", "severity")
            .annotate(n=Count("id"))
        ):
            incidents.add_metric([row["cluster__name"], row["severity"]], row["n"])
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
        for row in (
            Job.objects.filter(status=JobStatus.RUNNING)
            .values("cluster__name")
            .annotate(n=Count("id"))
        ):
            jobs.add_metric([row["cluster__name"]], row["n"])
        yield jobs
        age = GaugeMetricFamily(
            "kuae_check_last_run_age_seconds",
            "Seconds since each check kind last finished, by cluster",
            labels=["cluster", "kind"],
        )
        now = timezone.now()
        for row in (
            CheckRun.objects.filter(status="done")
            .values("cluster__name", "kind")
            .annotate(last=Max("started_at"))
        ):
            if row["last"] is not None:
                age.add_metric(
                    [row["cluster__name"], row["kind"]], (now - row["last"]).total_seconds()
                )
        yield age


def _caller(request: HttpRequest) -> tuple[bool, bool]:
    """(allowed, identified): the metrics token, or an admin by session or API token."""
    token = settings.KUAE_METRICS_TOKEN
    scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
    credential = credential.strip()
    if scheme.lower() in ("bearer", "token") and credential:
        if token and hmac.compare_digest(credential.encode(), token.encode()):
            return True, True
        try:
            token_user, _ = user_for_token(credential)
        except AuthenticationFailed:
            pass
        else:  # a valid API token: who it is decides, as on the API
            return token_user.has_role(ADMINS), True
    user = request.user
    if user.is_authenticated:
        return user.has_role(ADMINS), True  # type: ignore[union-attr]
    return False, False


@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text; 401 without valid credentials, 403 for a known non-admin (signed in,
    or sending another role's API token — an agent's Bearer token is no anonymous caller)."""
    allowed, identified = _caller(request)
    if not allowed:
        status = 403 if identified else 401
        return HttpResponse(
            "metrics need KUAE_METRICS_TOKEN or an admin\n",
            status=status,
            content_type="text/plain",
        )
    registry = CollectorRegistry()
    registry.register(FleetCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
