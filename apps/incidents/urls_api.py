"""Incident API routes, mounted under /api/v1/."""

from django.urls import path

from apps.incidents import api

urlpatterns = [
    path("incidents/", api.IncidentListView.as_view(), name="api-incident-list"),
    path("incidents/<int:pk>/", api.IncidentDetailView.as_view(), name="api-incident-detail"),
    path("incidents/<int:pk>/ack/", api.IncidentAckView.as_view(), name="api-incident-ack"),
    path("incidents/<int:pk>/postmortem/", api.PostmortemView.as_view(), name="api-postmortem"),
    *[
        path(
            f"incidents/<int:pk>/postmortem/{action}/",
            api.PostmortemActionView.as_view(action=action),
            name=f"api-postmortem-{action}",
        )
        for action in ("submit", "approve", "reject")
    ],
    path("ingest/alertmanager/", api.AlertmanagerView.as_view(), name="api-ingest-alertmanager"),
    path("alerts/unrouted/", api.UnroutedAlertListView.as_view(), name="api-alerts-unrouted"),
]
