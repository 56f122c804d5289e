"""Telemetry API routes, mounted under /api/v1/: the intake."""

from django.urls import path

from apps.telemetry import api

urlpatterns = [
    path("ingest/telemetry/", api.TelemetryIngestView.as_view(), name="api-ingest-telemetry"),
    path(
        "ingest/prometheus/",
        api.PrometheusIngestView.as_view(),
        name="api-ingest-prometheus",
    ),
    path("ingest/events/", api.EventIngestView.as_view(), name="api-ingest-events"),
]
