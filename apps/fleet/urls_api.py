"""Fleet API routes, mounted under /api/v1/."""

from django.urls import path

from apps.common import converters  # noqa: F401  (registers <hostname:…>)
from apps.fleet import api

urlpatterns = [
    path("clusters/", api.ClusterListView.as_view(), name="api-cluster-list"),
    path("clusters/<slug:name>/", api.ClusterDetailView.as_view(), name="api-cluster-detail"),
    path(
        "clusters/<slug:name>/automation/",
        api.ClusterAutomationView.as_view(),
        name="api-cluster-automation",
    ),
    path("nodes/", api.NodeListView.as_view(), name="api-node-list"),
    path("nodes/topology/", api.NodeTopologyView.as_view(), name="api-node-topology"),
    path("nodes/<hostname:hostname>/", api.NodeDetailView.as_view(), name="api-node-detail"),
    path("nodes/<hostname:hostname>/state/", api.NodeStateView.as_view(), name="api-node-state"),
    path(
        "nodes/<hostname:hostname>/heartbeat/",
        api.HeartbeatView.as_view(),
        name="api-node-heartbeat",
    ),
]
