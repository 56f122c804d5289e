"""Health API routes, mounted under /api/v1/."""

from django.urls import path

from apps.common import converters  # noqa: F401  (registers <hostname:…>)
from apps.health import api

urlpatterns = [
    path("health/run/", api.RunChecksView.as_view(), name="api-health-run"),
    path("health/runs/", api.RunListView.as_view(), name="api-health-runs"),
    path("health/runs/<int:pk>/", api.RunDetailView.as_view(), name="api-health-run-detail"),
    path("health/results/", api.ResultListView.as_view(), name="api-health-results"),
    path("pipeline/", api.PipelineView.as_view(), name="api-pipeline"),
    path("jobs/<int:pk>/preflight/", api.PreflightView.as_view(), name="api-job-preflight"),
    path(
        "nodes/<hostname:hostname>/admission/",
        api.NodeAdmissionView.as_view(),
        name="api-node-admission",
    ),
]
