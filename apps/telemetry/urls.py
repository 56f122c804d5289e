"""Telemetry pages' endpoints: the node page's charts (it polls them)."""

from django.urls import path

from apps.common import converters  # noqa: F401  (registers <hostname:…>)
from apps.telemetry import views

urlpatterns = [
    path(
        "charts/nodes/<hostname:hostname>/telemetry.json",
        views.node_telemetry_chart,
        name="chart-node-telemetry",
    ),
    path(
        "charts/nodes/<hostname:hostname>/gpus.json",
        views.node_gpu_chart,
        name="chart-node-gpus",
    ),
    path(
        "charts/nodes/<hostname:hostname>/ports.json",
        views.node_port_chart,
        name="chart-node-ports",
    ),
]
