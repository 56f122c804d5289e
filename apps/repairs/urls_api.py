"""Repairs API routes, mounted under /api/v1/."""

from django.urls import path

from apps.repairs import api

urlpatterns = [
    path("repairs/", api.RepairListView.as_view(), name="api-repair-list"),
    path("repairs/<int:pk>/", api.RepairDetailView.as_view(), name="api-repair-detail"),
    path("nodes/<str:hostname>/return/", api.NodeReturnView.as_view(), name="api-node-return"),
]
