"""Overview, chart data and the generated colour stylesheet."""

from django.urls import path

from apps.reports import views

urlpatterns = [
    path("", views.overview_page, name="overview"),
    path("reliability/", views.reliability_page, name="reliability"),
    path("charts/jobs/<int:pk>/progress.json", views.job_figure, name="chart-job-progress"),
    path(
        "charts/nodes/<str:hostname>/telemetry.json", views.node_figure, name="chart-node-telemetry"
    ),
]
