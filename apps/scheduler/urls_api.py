"""Scheduler API routes, mounted under /api/v1/."""

from django.urls import path

from apps.scheduler import api

urlpatterns = [
    path("ingest/slurm/", api.SlurmIngestView.as_view(), name="api-ingest-slurm"),
    path("actuations/", api.ActuationListView.as_view(), name="api-actuation-list"),
]
