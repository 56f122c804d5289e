"""Telemetry API routes, mounted under /api/v1/: the intake, and a node's host readings."""

from django.urls import path

from apps.common import converters  # noqa: F401  (registers <hostname:…>)
from apps.telemetry import api

urlpatterns = [
    path("ingest/telemetry/", api.TelemetryIngestView.as_view(), name="api-ingest-telemetry"),
    path(
        "ingest/prometheus/",
        api.PrometheusIngestView.as_view(),
        name="api-ingest-prometheus",
    ),
    path("ingest/events/", api.EventIngestView.as_view(), name="api-ingest-events"),
    path("nodes/<hostname:hostname>/host/", api.NodeHostView.as_view(), name="api-node-host"),
]
