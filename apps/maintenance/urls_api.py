"""Maintenance API routes, mounted under /api/v1/."""

from django.urls import path

from apps.maintenance import api

urlpatterns = [
    path("maintenance/", api.WindowListView.as_view(), name="api-maintenance-list"),
    path("maintenance/<int:pk>/", api.WindowDetailView.as_view(), name="api-maintenance-detail"),
]
