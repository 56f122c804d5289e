"""Incident API routes, mounted under /api/v1/."""

from django.urls import path

from apps.incidents import api

urlpatterns = [
    path("ingest/slurm/", api.SlurmIngestView.as_view(), name="api-ingest-slurm"),
    path("ingest/alertmanager/", api.AlertmanagerView.as_view(), name="api-ingest-alertmanager"),
]
