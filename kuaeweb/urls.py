"""URL wiring: pages, the versioned API, schema and docs, service endpoints."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from apps.common import views as common_views

api_v1 = [
    path("", include("apps.fleet.urls_api")),
    path("", include("apps.jobs.urls_api")),
    path("", include("apps.incidents.urls_api")),
    path("", include("apps.health.urls_api")),
    path("", include("apps.reports.urls_api")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
]

urlpatterns = [
    path("healthz", common_views.healthz, name="healthz"),
    path("readyz", common_views.readyz, name="readyz"),
    path("ui/colours.css", common_views.colours_css, name="colours-css"),
    path("api/v1/", include(api_v1)),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("", include("apps.reports.urls")),
    path("", include("apps.fleet.urls")),
    path("", include("apps.jobs.urls")),
    path("", include("apps.health.urls")),
    path("", include("apps.incidents.urls")),
]
