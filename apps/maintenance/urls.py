"""Maintenance pages."""

urlpatterns: list = []
