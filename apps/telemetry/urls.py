"""Telemetry pages' endpoints: the node page's charts (it polls them)."""

from django.urls import path

from apps.telemetry import views

urlpatterns = [
    path(
        "charts/nodes/<str:hostname>/telemetry.json",
        views.node_telemetry_chart,
        name="chart-node-telemetry",
    ),
    path(
        "charts/nodes/<str:hostname>/gpus.json",
        views.node_gpu_chart,
        name="chart-node-gpus",
    ),
    path(
        "charts/nodes/<str:hostname>/ports.json",
        views.node_port_chart,
        name="chart-node-ports",
    ),
]
