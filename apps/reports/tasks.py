"""Reports in the background: the Monday e-mail, the overview's snapshots."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from apps.common.weeks import WEEK, parse_week, week_start
from apps.fleet.models import Cluster
from apps.reports.availability_days import seal_days
from apps.reports.services import snapshot_refresh, weekly_report_send


@shared_task(
    name="apps.reports.tasks.send_weekly_reports",
    ignore_result=True,
    acks_late=True,
    autoretry_for=(OSError,),
    retry_backoff=True,
    retry_backoff_max=600,
    max_retries=8,
)
def send_weekly_reports(week: str | None = None) -> None:
    """E-mail every cluster's report for `week` (default: the week that just ended); a
    week already sent is skipped, so a retry or a second beat never sends it twice."""
    start = parse_week(week) if week else week_start(timezone.now()) - WEEK
    for cluster in Cluster.objects.order_by("name"):
        weekly_report_send(cluster=cluster, start=start, now=timezone.now())


@shared_task(name="apps.reports.tasks.refresh_snapshots", ignore_result=True, expires=55)
def refresh_snapshots() -> None:
    """Recompute the overview's slow KPIs for every cluster (beat, every minute)."""
    now = timezone.now()
    for cluster in Cluster.objects.all():
        snapshot_refresh(cluster=cluster, now=now)


@shared_task(name="apps.reports.tasks.seal_availability_days", ignore_result=True, expires=3000)
def seal_availability_days() -> None:
    """Sum each cluster's finished days' node downtime for the reports' availability (beat,
    hourly; docs/formulas.md, GPU availability): new days, and days a back-filled change
    made stale."""
    now = timezone.now()
    for cluster in Cluster.objects.all():
        seal_days(cluster=cluster, now=now)
