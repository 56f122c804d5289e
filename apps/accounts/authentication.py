"""`Authorization: Token <token>` (or `Bearer <token>`, what Alertmanager and Prometheus
send by default) against hashed, revocable tokens."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from apps.accounts import scoping, token_cache
from apps.accounts.models import ApiToken, User, hash_token

_TOUCH_EVERY = dt.timedelta(minutes=5)
KEYWORDS = (b"token", b"bearer")


class HashedTokenAuthentication(authentication.BaseAuthentication):
    """Token auth whose `WWW-Authenticate` header makes DRF answer 401, not 403.

    `Token` and `Bearer` are the same credential: a Bearer agent token is that agent (a 403
    where agents may not go), never an anonymous 401. A view with `remember_tokens = True`
    (an intake that takes bursts) has a live token remembered for a few seconds
    (apps/accounts/token_cache.py; docs/api.md, Conventions).
    """

    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        raw = token_of(request)
        if raw is None:
            return None
        view = (request.parser_context or {}).get("view")
        if getattr(view, "remember_tokens", False):  # a burst intake: apps/accounts/token_cache.py
            return token_cache.cached(hash_token(raw), lambda: user_for_token(raw))
        return user_for_token(raw)

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


def token_of(request: Request) -> str | None:
    """The raw token of `Authorization: Token …` or `Bearer …`; None without one (another
    authentication may apply); AuthenticationFailed for a malformed header."""
    header = authentication.get_authorization_header(request).split()
    if not header or header[0].lower() not in KEYWORDS:
        return None
    if len(header) != 2:
        raise exceptions.AuthenticationFailed(
            "Authorization header must be 'Token <token>' or 'Bearer <token>'"
        )
    try:
        raw = header[1].decode()
    except UnicodeError as exc:
        raise exceptions.AuthenticationFailed("token is not valid text") from exc
    return raw


def user_for_token(raw: str) -> tuple[User, ApiToken]:
    """The active user an unrevoked, unexpired API token belongs to (a token lives
    KUAE_TOKEN_TTL_DAYS from its issue); AuthenticationFailed otherwise."""
    now = timezone.now()
    token = (
        # The user's scope too (lent by the fleet, apps/accounts/scoping.py): no query later.
        ApiToken.objects.select_related("user", *(f"user__{r}" for r in scoping.user_related()))
        .filter(
            key_hash=hash_token(raw),
            revoked_at__isnull=True,
            created_at__gt=now - dt.timedelta(days=settings.KUAE_TOKEN_TTL_DAYS),
        )
        .first()
    )
    if token is None or not token.user.is_active:
        raise exceptions.AuthenticationFailed("invalid, revoked or expired token")
    if token.last_used_at is None or now - token.last_used_at > _TOUCH_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user, token
