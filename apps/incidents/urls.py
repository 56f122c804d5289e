"""Incident and postmortem pages."""

from django.urls import path

from apps.incidents import views, views_jobs, views_postmortems

urlpatterns = [
    path("incidents/", views.incident_list_page, name="incident-list"),
    path("incidents/new/", views.incident_file_page, name="incident-new"),
    path("incidents/<int:pk>/", views.incident_detail_page, name="incident-detail"),
    path("incidents/<int:pk>/edit/", views.incident_edit, name="incident-edit"),
    path("incidents/<int:pk>/ack/", views.incident_ack, name="incident-ack"),
    path("incidents/<int:pk>/take/", views.incident_take, name="incident-take"),
    path("incidents/<int:pk>/comment/", views.incident_comment, name="incident-comment"),
    path("jobs/<int:pk>/incidents/", views_jobs.job_incidents_fragment, name="job-incidents"),
    path("incidents/<int:pk>/postmortem/", views_postmortems.postmortem_page, name="postmortem"),
    path(
        "incidents/<int:pk>/postmortem/<str:step>/",
        views_postmortems.postmortem_step,
        name="postmortem-step",
    ),
    path("alerts/unrouted/", views.unrouted_alert_list_page, name="unrouted-alerts"),
    path("action-items/", views_postmortems.action_items_page, name="action-items"),
    path(
        "action-items/<int:item_id>/done/",
        views_postmortems.action_item_done,
        name="action-item-done",
    ),
]
