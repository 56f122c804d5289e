"""Health pages and fragments."""

from django.urls import path

from apps.common import converters  # noqa: F401  (registers <hostname:…>)
from apps.health import topology, views

urlpatterns = [
    path("health/", views.health_page, name="health"),
    path("topology/", topology.topology_page, name="node-topology"),
    path("health/run/", views.run_now, name="health-run"),
    path("health/summary/", views.summary_fragment, name="health-summary"),
    path("pipeline/banner/", views.pipeline_banner_fragment, name="pipeline-banner"),
    path("health/thresholds/", views.thresholds_save, name="health-thresholds"),
    path(
        "health/nodes/<hostname:hostname>/evidence/",
        views.node_evidence_fragment,
        name="health-node-evidence",
    ),
    path("health/jobs/<int:pk>/suspects/", views.job_suspects_fragment, name="health-job-suspects"),
]
