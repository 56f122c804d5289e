"""Incident pages."""

from django.urls import path

from apps.incidents import views

urlpatterns = [
    path("incidents/", views.incident_list_page, name="incident-list"),
    path("incidents/<int:pk>/", views.incident_detail_page, name="incident-detail"),
    path("incidents/<int:pk>/edit/", views.incident_edit, name="incident-edit"),
    path("incidents/<int:pk>/comment/", views.incident_comment, name="incident-comment"),
]
