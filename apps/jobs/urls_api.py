"""Job API routes, mounted under /api/v1/."""

from django.urls import path

from apps.jobs import api

urlpatterns = [
    path("jobs/", api.JobListView.as_view(), name="api-job-list"),
    path("jobs/<int:pk>/", api.JobDetailView.as_view(), name="api-job-detail"),
    path("jobs/<int:pk>/metrics/", api.JobMetricsView.as_view(), name="api-job-metrics"),
    path(
        "jobs/<int:pk>/checkpoints/", api.JobCheckpointsView.as_view(), name="api-job-checkpoints"
    ),
    path("jobs/<int:pk>/phases/", api.JobPhasesView.as_view(), name="api-job-phases"),
    path("jobs/<int:pk>/ranks/", api.JobRanksView.as_view(), name="api-job-ranks"),
    # The stalls intake is the jobs': stall reports are about jobs' ranks.
    path("ingest/stalls/", api.StallIngestView.as_view(), name="api-ingest-stalls"),
]
