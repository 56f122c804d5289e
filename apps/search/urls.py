"""Global search page."""

from django.urls import path

from apps.search import views

urlpatterns = [path("search/", views.search_page, name="search")]
