"""The audit log: sign-ins, failed and throttled sign-ins, sign-outs, permission denials;
and the sign-in throttle, counted from the log itself so every worker process agrees.

The throttle (docs/operations.md, "Sign-in throttling") counts failures per (account,
client address), so a guesser holds back only their own address, never the person's; a
browser that signed in as the account before carries a signed known-device cookie that the
count does not stop, up to that device's own failures (KUAE_LOGIN_DEVICE_FAILURES).

Checking and counting are one step: an attempt is written down as a failure *before* its
password is checked (`login_attempt_reserve`) and then judged by a count that includes it,
so of many attempts sent at once no more than the limit reach the password check."""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import unicodedata
from collections.abc import Callable
from contextvars import ContextVar
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

# A browser that signed in successfully carries a signed cookie: a random id of its own and
# the accounts (login_key) it signed in as, at most DEVICE_KEYS of them.
DEVICE_COOKIE = "kuae_device"
DEVICE_SALT = "apps.accounts.audit.known-device"
DEVICE_KEYS = 5


def client_ip(request: HttpRequest | None) -> str | None:
    """The caller's address as the server sees it (behind a proxy, have it pass the
    client's: gunicorn's --proxy-protocol)."""
    return request.META.get("REMOTE_ADDR") if request is not None else None


def _event(kind: str, request: HttpRequest | None, username: str, device: str) -> AuditEvent:
    return AuditEvent.objects.create(
        kind=kind,
        username=username[:150],
        ip=client_ip(request),
        device=device[:32],
        method=(request.method or "")[:8] if request is not None else "",
        path=request.get_full_path()[:500] if request is not None else "",
    )


def audit(kind: str, request: HttpRequest | None, username: str = "", device: str = "") -> None:
    """Write one audit event for this request (`device`: the known-device id it carried);
    with the database down it is logged instead, so a refusal stays a refusal rather than
    becoming a 500."""
    try:
        _event(kind, request, username, device)
    except DatabaseError:
        log.warning("audit event not stored (database unavailable): %s %s", kind, username)


def login_key(username: str) -> str:
    """The account sign-in failures are counted under. Django's sign-in form strips the
    username and NFKC-normalises it before the backend looks it up, so `" otto "` and
    `ｏｔｔｏ` reach the same account: the key does the same, and casefolds too, so `OTTO`
    and `Otto` count against otto. (The lookup itself is exact, so `OTTO` is no other
    account in practice; folding errs towards counting, and a count only ever holds back
    the address it came from.)"""
    name = unicodedata.normalize("NFKC", username.strip())
    return unicodedata.normalize("NFKC", name.casefold()).strip()[:150]


def _device_cookie(request: HttpRequest | None) -> dict[str, Any] | None:
    """The known-device cookie's content when its signature holds and it is not older than
    KUAE_LOGIN_DEVICE_DAYS: `{"id": str, "users": [login_key, …]}`; else None."""
    raw = request.COOKIES.get(DEVICE_COOKIE) if request is not None else None
    if not raw:
        return None
    try:
        found = signing.loads(
            raw, salt=DEVICE_SALT, max_age=dt.timedelta(days=settings.KUAE_LOGIN_DEVICE_DAYS)
        )
    except signing.BadSignature:  # forged, tampered with, expired, or not ours
        return None
    if not isinstance(found, dict):
        return None
    device, users = found.get("id"), found.get("users")
    if not isinstance(device, str) or not device or not isinstance(users, list):
        return None
    return {"id": device, "users": [u for u in users if isinstance(u, str)]}


def known_device(request: HttpRequest | None, key: str) -> str | None:
    """The id of this browser's known-device cookie when it signed in as the account `key`
    (a login_key) before; None otherwise (no cookie, a forged one, another account's)."""
    cookie = _device_cookie(request)
    if cookie is None or not key or key not in cookie["users"]:
        return None
    return cookie["id"]


def remember_device(request: HttpRequest, response: HttpResponse, username: str) -> None:
    """After a successful sign-in: this browser is a known device for that account from now
    on (signed, HttpOnly, SameSite=Lax, Secure over HTTPS, KUAE_LOGIN_DEVICE_DAYS long). The
    browser keeps its id, and the few other accounts it signed in as lately."""
    cookie = _device_cookie(request) or {"id": secrets.token_urlsafe(18), "users": []}
    key = login_key(username)
    users = [key, *(u for u in cookie["users"] if u != key)][:DEVICE_KEYS]
    response.set_cookie(
        DEVICE_COOKIE,
        signing.dumps({"id": cookie["id"], "users": users}, salt=DEVICE_SALT),
        max_age=settings.KUAE_LOGIN_DEVICE_DAYS * 86400,
        secure=request.is_secure() or settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


def login_throttled(request: HttpRequest | None, username: str, *, reserved: bool = False) -> bool:
    """True when a sign-in attempt as `username` from this request must be refused (429,
    the password unchecked); all counts are failures within KUAE_LOGIN_WINDOW_S, other than
    the attempt's own when it is already written down (`reserved`, login_attempt_reserve).

    - A known device for the account (`known_device`) is refused only once that device
      has failed KUAE_LOGIN_DEVICE_FAILURES times itself: a stolen cookie is no unlimited
      oracle. Until then no one else's failures hold it back.
    - Any other browser is refused when this (account, address) failed KUAE_LOGIN_FAILURES
      times, or this address did 4× as many over all accounts (one machine spraying
      passwords over many users). A guesser elsewhere does not hold it back.
    Without a request (another path to `authenticate()`) the address is unknown: such
    attempts count together, as one address."""
    since = timezone.now() - dt.timedelta(seconds=settings.KUAE_LOGIN_WINDOW_S)
    failed = AuditEvent.objects.filter(kind=Kind.LOGIN_FAILED, at__gte=since)
    own = 1 if reserved else 0  # the reserved row is in every count below
    key = login_key(username)
    device = known_device(request, key)
    # Past its own limit a known device is no exemption: the counts below decide.
    device_limit = settings.KUAE_LOGIN_DEVICE_FAILURES
    if device is not None and failed.filter(device=device).count() - own < device_limit:
        return False
    limit = settings.KUAE_LOGIN_FAILURES
    ip = client_ip(request)
    if key and failed.filter(username=key, ip=ip).count() - own >= limit:
        return True
    return bool(ip) and failed.filter(ip=ip).count() - own >= 4 * limit


# The attempt the backend reserved in this context, so that the failure signal Django sends
# after it does not write the same failure twice.
_reserved: ContextVar[int | None] = ContextVar("kuae_login_reserved", default=None)


def login_attempt_reserve(request: HttpRequest | None, username: str) -> AuditEvent | None:
    """Write this attempt down as a failure before its password is checked, then judge it
    by counts that include it: the check and the count are one step. Of attempts sent at
    once, each sees every one written before its own, so the one that would be the limit's
    next is refused whatever order they run in. Returns the reservation (the caller
    releases it on success, `login_attempt_release`), or None when the attempt is
    throttled: its row then becomes a *throttled* event, not a failure.

    The row is committed on its own (sign-in runs outside any transaction: no
    ATOMIC_REQUESTS), so other workers see it at once."""
    key = login_key(username)
    event = _event(Kind.LOGIN_FAILED, request, key, known_device(request, key) or "")
    _reserved.set(event.pk)
    if login_throttled(request, username, reserved=True):
        AuditEvent.objects.filter(pk=event.pk).update(kind=Kind.LOGIN_THROTTLED)
        return None
    return event


def login_attempt_release(event: AuditEvent) -> None:
    """The reserved attempt succeeded: it is no failure."""
    _reserved.set(None)
    AuditEvent.objects.filter(pk=event.pk).delete()


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
    if _reserved.get() is not None:  # already written down by login_attempt_reserve
        _reserved.set(None)
        return
    key = login_key(str(credentials.get("username", "")))
    audit(Kind.LOGIN_FAILED, request, key, known_device(request, key) or "")


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
