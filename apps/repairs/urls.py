"""Repairs pages."""

from django.urls import path

from apps.repairs import views

urlpatterns = [
    path("repairs/", views.repairs_page, name="repairs"),
    path("repairs/<int:pk>/", views.repair_page, name="repair-detail"),
    path("repairs/<int:pk>/step/", views.repair_step_page, name="repair-step"),
    path("repairs/<int:pk>/return/", views.repair_return_page, name="repair-return"),
]
