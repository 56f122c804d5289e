"""The audit log: sign-ins, failed and throttled sign-ins, sign-outs, permission denials;
and the sign-in throttle, counted from the log itself so every worker process agrees."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.db import DatabaseError
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from apps.accounts.models import AuditEvent

Kind = AuditEvent.Kind
log = logging.getLogger(__name__)


def client_ip(request: HttpRequest | None) -> str | None:
    """The caller's address as the server sees it (behind a proxy, have it pass the
    client's: gunicorn's --proxy-protocol)."""
    return request.META.get("REMOTE_ADDR") if request is not None else None


def audit(kind: str, request: HttpRequest | None, username: str = "") -> None:
    """Write one audit event for this request; with the database down it is logged instead,
    so a refusal stays a refusal rather than becoming a 500."""
    try:
        AuditEvent.objects.create(
            kind=kind,
            username=username[:150],
            ip=client_ip(request),
            method=(request.method or "")[:8] if request is not None else "",
            path=request.get_full_path()[:500] if request is not None else "",
        )
    except DatabaseError:
        log.warning("audit event not stored (database unavailable): %s %s", kind, username)


def login_throttled(request: HttpRequest, username: str) -> bool:
    """True when this username or this address failed to sign in too often lately
    (KUAE_LOGIN_FAILURES within KUAE_LOGIN_WINDOW_S)."""
    since = timezone.now() - dt.timedelta(seconds=settings.KUAE_LOGIN_WINDOW_S)
    failed = AuditEvent.objects.filter(kind=Kind.LOGIN_FAILED, at__gte=since)
    limit = settings.KUAE_LOGIN_FAILURES
    if username and failed.filter(username=username).count() >= limit:
        return True
    ip = client_ip(request)
    return bool(ip) and failed.filter(ip=ip).count() >= 4 * limit


@receiver(user_logged_in)
def _logged_in(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    audit(Kind.LOGIN, request, user.get_username())


@receiver(user_logged_out)
def _logged_out(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    audit(Kind.LOGOUT, request, user.get_username() if user else "")


@receiver(user_login_failed)
def _login_failed(
    sender: Any, credentials: dict, request: HttpRequest | None = None, **kw: Any
) -> None:
    audit(Kind.LOGIN_FAILED, request, str(credentials.get("username", "")))


class AuditDenialsMiddleware:
    """Record every 403 (a page or an endpoint refused to an authenticated caller)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code == 403:
            user = getattr(request, "user", None)
            # DRF authenticates tokens inside the view: its user is on the response's request.
            drf_request = getattr(response, "renderer_context", {}).get("request")
            if drf_request is not None:
                user = getattr(drf_request, "user", user)
            name = user.get_username() if user is not None and user.is_authenticated else ""
            audit(Kind.DENIED, request, name)
        return response
