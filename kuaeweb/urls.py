"""URL wiring: pages, the versioned API, schema and docs, service endpoints."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path
from django.views.i18n import JavaScriptCatalog

from apps.accounts import language, oidc_views
from apps.accounts import views as account_views
from apps.accounts.schema import ReaderSchemaView, api_docs
from apps.common import views as common_views
from apps.metrics import views as metrics_views

api_v1: list[URLPattern | URLResolver] = [
    path("", include("apps.fleet.urls_api")),
    path("", include("apps.telemetry.urls_api")),
    path("", include("apps.jobs.urls_api")),
    path("", include("apps.incidents.urls_api")),
    path("", include("apps.health.urls_api")),
    path("", include("apps.reports.urls_api")),
    path("", include("apps.scheduler.urls_api")),
    path("", include("apps.maintenance.urls_api")),
    path("", include("apps.repairs.urls_api")),
    # The schema and its Swagger UI: readers only, unless KUAE_PUBLIC_DOCS makes them public.
    path("schema/", ReaderSchemaView.as_view(), name="api-schema"),
]

# The admin inside the app's frame (templates/admin/base_site.html; docs/operations.md, The admin).
admin.site.site_header = "KUAE Ops admin"
admin.site.site_title = "KUAE Ops admin"
admin.site.index_title = "Users, clusters and settings"

urlpatterns = [
    path("healthz", common_views.healthz, name="healthz"),
    path("readyz", common_views.readyz, name="readyz"),
    path("ui/colours.css", common_views.colours_css, name="colours-css"),
    path("api/v1/", include(api_v1)),
    path("api/docs/", api_docs, name="api-docs"),
    path("metrics", metrics_views.metrics, name="metrics"),
    path("login/", account_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # OpenID Connect sign-in: 404 unless KUAE_OIDC_ISSUER is set (docs/sign-in.md)
    path("oidc/authenticate/", oidc_views.SignInStart.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", oidc_views.SignInReturn.as_view(), name="oidc_authentication_callback"),
    # The header's language switch (Django's set_language, also saved to a signed-in person),
    # a person's own settings, and the scripts' translations (docs/pages.md, Language).
    path("i18n/setlang/", language.set_language, name="set_language"),
    path("jsi18n/", JavaScriptCatalog.as_view(), name="javascript-catalog"),
    path("settings/", language.my_settings, name="my-settings"),
    path("admin/login/", account_views.admin_login),  # the sign-in throttle, as /login/
    path("admin/", admin.site.urls),
    path("", include("apps.reports.urls")),
    path("", include("apps.fleet.urls")),
    path("", include("apps.telemetry.urls")),
    path("", include("apps.jobs.urls")),
    path("", include("apps.health.urls")),
    path("", include("apps.incidents.urls")),
    path("", include("apps.maintenance.urls")),
    path("", include("apps.repairs.urls")),
    path("", include("apps.search.urls")),
]

# Error pages inside the app's frame (templates/403.html, 404.html, 500.html); JSON for the API.
handler403 = "apps.common.views.permission_denied"
handler404 = "apps.common.views.page_not_found"
handler500 = "apps.common.views.server_error"
