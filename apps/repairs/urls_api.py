"""Repairs API routes, mounted under /api/v1/."""

from django.urls import path

from apps.common import converters  # noqa: F401  (registers <hostname:…>)
from apps.repairs import api

urlpatterns = [
    path("repairs/", api.RepairListView.as_view(), name="api-repair-list"),
    path("repairs/<int:pk>/", api.RepairDetailView.as_view(), name="api-repair-detail"),
    path("nodes/<hostname:hostname>/return/", api.NodeReturnView.as_view(), name="api-node-return"),
]
