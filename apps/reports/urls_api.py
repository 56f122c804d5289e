"""Report API routes, mounted under /api/v1/."""

from django.urls import path

from apps.reports import api

urlpatterns = [
    path("reports/reliability/", api.ReliabilityView.as_view(), name="api-reliability"),
    path("reports/weekly/", api.WeeklyView.as_view(), name="api-weekly"),
    path("reports/availability/", api.AvailabilityView.as_view(), name="api-availability"),
]
