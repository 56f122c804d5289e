"""Fleet pages and the node page's chart."""

from django.urls import path

from apps.fleet import views

urlpatterns = [
    path("nodes/", views.node_list_page, name="node-list"),
    path(
        "clusters/<slug:name>/automation/",
        views.cluster_automation_page,
        name="cluster-automation",
    ),
    path("nodes/<str:hostname>/", views.node_detail_page, name="node-detail"),
    path("nodes/<str:hostname>/state/", views.node_state_page, name="node-state"),
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
]
