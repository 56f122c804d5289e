"""The audit log: sign-ins, failed and throttled sign-ins, sign-outs, permission denials;
and the sign-in throttle, counted from the log itself so every worker process agrees."""

from __future__ import annotations

import datetime as dt
import logging
import unicodedata
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.core import signing
from django.db import DatabaseError
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from apps.accounts.models import AuditEvent

Kind = AuditEvent.Kind
log = logging.getLogger(__name__)

# A browser that signed in successfully carries a signed list of the users it signed in as.
DEVICE_COOKIE = "kuae_device"
DEVICE_SALT = "apps.accounts.audit.device"
DEVICE_DAYS = 30
DEVICE_KEYS = 5


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


def login_key(username: str) -> str:
    """The name sign-in failures are counted under: NFKC and casefolded, so `ｏｔｔｏ` and
    `OTTO` (which Django's form and a case-insensitive reader take for otto) count as otto."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", username).casefold())
    return folded[:150]


def trusted_device(request: HttpRequest | None, key: str) -> bool:
    """True when this browser signed in as `key` before (a signed cookie set on success,
    DEVICE_DAYS old at most): the per-address limit does not hold it back."""
    raw = request.COOKIES.get(DEVICE_COOKIE) if request is not None else None
    if not raw or not key:
        return False
    try:
        keys = signing.loads(raw, salt=DEVICE_SALT, max_age=dt.timedelta(days=DEVICE_DAYS))
    except signing.BadSignature:
        return False
    return isinstance(keys, list) and key in keys


def remember_device(request: HttpRequest, response: HttpResponse, username: str) -> None:
    """After a successful sign-in: this browser is trusted for that user (a few users each)."""
    keys: list[str] = []
    raw = request.COOKIES.get(DEVICE_COOKIE)
    if raw:
        try:
            found = signing.loads(raw, salt=DEVICE_SALT, max_age=dt.timedelta(days=DEVICE_DAYS))
            keys = [k for k in found if isinstance(k, str)] if isinstance(found, list) else []
        except signing.BadSignature:
            keys = []
    key = login_key(username)
    keys = [key, *(k for k in keys if k != key)][:DEVICE_KEYS]
    response.set_cookie(
        DEVICE_COOKIE,
        signing.dumps(keys, salt=DEVICE_SALT),
        max_age=DEVICE_DAYS * 86400,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


def login_throttled(request: HttpRequest | None, username: str) -> bool:
    """True when this username (normalised, `login_key`) failed to sign in too often lately
    (KUAE_LOGIN_FAILURES within KUAE_LOGIN_WINDOW_S), or this address did (4× as many) and
    this browser has not signed in as that user before.

    The address limit slows one machine guessing many users' passwords; it cannot lock out
    everyone behind a proxy: whoever has signed in from their browser in the last
    DEVICE_DAYS is not held back by it (the username limit still applies to them)."""
    since = timezone.now() - dt.timedelta(seconds=settings.KUAE_LOGIN_WINDOW_S)
    failed = AuditEvent.objects.filter(kind=Kind.LOGIN_FAILED, at__gte=since)
    limit = settings.KUAE_LOGIN_FAILURES
    key = login_key(username)
    if key and failed.filter(username=key).count() >= limit:
        return True
    ip = client_ip(request)
    if not ip or trusted_device(request, key):
        return False
    return failed.filter(ip=ip).count() >= 4 * limit


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
    audit(Kind.LOGIN_FAILED, request, login_key(str(credentials.get("username", ""))))


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
