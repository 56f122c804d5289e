"""Fleet pages: the nodes list, a node's page and its state, a cluster's automation."""

from django.urls import path

from apps.common import converters  # noqa: F401  (registers <hostname:…>)
from apps.fleet import views

urlpatterns = [
    path("nodes/", views.node_list_page, name="node-list"),
    path(
        "clusters/<slug:name>/automation/",
        views.cluster_automation_page,
        name="cluster-automation",
    ),
    path("nodes/<hostname:hostname>/", views.node_detail_page, name="node-detail"),
    path("nodes/<hostname:hostname>/state/", views.node_state_page, name="node-state"),
]
