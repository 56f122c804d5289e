"""Report pages and the chart data behind them (the job page's effective-rate panel too)."""

from django.urls import path, re_path

from apps.reports import (
    views_gpus,
    views_jobs,
    views_overview,
    views_reliability,
    views_trends,
    views_weekly,
)

urlpatterns = [
    path("", views_overview.overview_page, name="overview"),
    path("reliability/", views_reliability.reliability_page, name="reliability"),
    path("reports/weekly/", views_weekly.weekly_page, name="weekly-report"),
    re_path(
        r"^reports/weekly\.(?P<fmt>csv|zip|pdf)$",
        views_weekly.weekly_download,
        name="weekly-download",
    ),
    path("reports/trends/", views_trends.trends_page, name="trends"),
    path("gpus/", views_gpus.gpu_fleet_page, name="gpu-fleet"),
    path(
        "charts/jobs/<int:pk>/effective/",
        views_jobs.job_effective_fragment,
        name="job-effective",
    ),
    path("charts/reports/mfu.json", views_trends.mfu_chart, name="chart-mfu"),
    path(
        "charts/reports/availability.json",
        views_trends.availability_chart,
        name="chart-availability",
    ),
    path(
        "charts/reports/availability-heatmap.json",
        views_trends.availability_heatmap_chart,
        name="chart-availability-heatmap",
    ),
    path("charts/reports/effective.json", views_trends.effective_chart, name="chart-effective"),
    path(
        "charts/reports/checkpoints.json", views_trends.checkpoint_chart, name="chart-checkpoints"
    ),
]
