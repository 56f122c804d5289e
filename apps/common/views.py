"""Service endpoints outside the API: liveness and readiness."""

from __future__ import annotations

from celery import current_app
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from django.views.decorators.cache import cache_control, never_cache

from apps.common.choices import palette_css


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is alive."""
    return JsonResponse({"status": "ok"})


def _broker_ok(url: str) -> tuple[bool, str]:
    try:
        options = current_app.conf.broker_transport_options
        with current_app.connection_for_write(url, transport_options=options) as conn:
            conn.ensure_connection(max_retries=1, timeout=1)
        return True, "ok"
    except Exception as exc:  # any broker error means "not reachable now"
        return False, f"{type(exc).__name__}: {exc}"[:200]


@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    """200 while the database answers, else 503; the broker is reported but never fails it.

    Anyone not signed in (a load balancer, the open network) reads only ok / not ok: the
    errors name the database's host, port, role and name. Signed-in users read them."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database, db_ok = "ok", True
    except Exception as exc:  # the database being down is exactly what this reports
        database, db_ok = f"{type(exc).__name__}: {exc}"[:200], False
    broker_ok, broker = _broker_ok(settings.CELERY_BROKER_URL)
    status = 200 if db_ok else 503
    word = {True: "ok", False: "not ok"}
    if not (db_ok and request.user.is_authenticated):
        # (With the database down no user can be read: the same short answer for all.)
        return JsonResponse({"status": word[db_ok], "broker": word[broker_ok]}, status=status)
    return JsonResponse(
        {
            "status": "ok",
            "ready": db_ok,
            "database": database,
            "broker": broker,
            "broker_ok": broker_ok,
        },
        status=status,
    )


@cache_control(max_age=3600)
def colours_css(request: HttpRequest) -> HttpResponse:
    """CSS classes for every state's colour, generated from the choices that define them."""
    return HttpResponse(palette_css(), content_type="text/css")


def _api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """404: the API answers JSON as it does everywhere; a page, the app's own 404 page."""
    if _api(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """403: JSON for the API; for a page, the app's own 403 page saying why."""
    if _api(request):
        return JsonResponse(
            {"detail": "You do not have permission to perform this action."}, status=403
        )
    return defaults.permission_denied(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """500: JSON for the API; for a page, templates/500.html rendered without a request or
    context processors (nothing that needs the database, which may be what failed)."""
    if _api(request):
        return JsonResponse({"detail": "Server error."}, status=500)
    return defaults.server_error(request)
