"""Maintenance pages."""

from django.urls import path

from apps.maintenance import views

urlpatterns = [
    path("maintenance/", views.calendar_page, name="maintenance"),
    path("maintenance/<int:pk>/", views.window_page, name="maintenance-detail"),
    path("maintenance/<int:pk>/end/", views.window_end_page, name="maintenance-end"),
]
