"""Overview, chart data and the generated colour stylesheet."""

from django.urls import path, re_path

from apps.reports import views, views_weekly

urlpatterns = [
    path("", views.overview_page, name="overview"),
    path("reliability/", views.reliability_page, name="reliability"),
    path("reports/weekly/", views_weekly.weekly_page, name="weekly-report"),
    re_path(
        r"^reports/weekly\.(?P<fmt>csv|pdf)$", views_weekly.weekly_download, name="weekly-download"
    ),
    path("reports/trends/", views_weekly.trends_page, name="trends"),
    path(
        "charts/jobs/<int:pk>/effective/",
        views_weekly.job_effective_fragment,
        name="job-effective",
    ),
    path("charts/reports/mfu.json", views_weekly.mfu_chart, name="chart-mfu"),
    path(
        "charts/reports/availability.json",
        views_weekly.availability_chart,
        name="chart-availability",
    ),
    path(
        "charts/reports/availability-heatmap.json",
        views_weekly.availability_heatmap_chart,
        name="chart-availability-heatmap",
    ),
    path("charts/reports/effective.json", views_weekly.effective_chart, name="chart-effective"),
    path(
        "charts/reports/checkpoints.json", views_weekly.checkpoint_chart, name="chart-checkpoints"
    ),
]
