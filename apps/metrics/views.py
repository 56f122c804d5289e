"""`/metrics`: the dashboard's own state for Prometheus (`selectors.FleetCollector`).

Not public: a scraper sends `Authorization: Bearer KUAE_METRICS_TOKEN` (or an admin's API
token), or an admin is signed in; KUAE_PUBLIC_METRICS is not offered on purpose — the token
is the switch.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from rest_framework.exceptions import AuthenticationFailed

from apps.accounts.authentication import user_for_token
from apps.accounts.choices import ADMINS
from apps.metrics.selectors import FleetCollector


def _caller(request: HttpRequest) -> tuple[bool, bool]:
    """(allowed, identified): the metrics token, or an admin by session or API token."""
    token = settings.KUAE_METRICS_TOKEN
    scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
    credential = credential.strip()
    if scheme.lower() in ("bearer", "token") and credential:
        if token and hmac.compare_digest(credential.encode(), token.encode()):
            return True, True
        try:
            token_user, _ = user_for_token(credential)
        except AuthenticationFailed:
            pass
        else:  # a valid API token: who it is decides, as on the API
            return token_user.has_role(ADMINS), True
    user = request.user
    if user.is_authenticated:
        return user.has_role(ADMINS), True  # type: ignore[union-attr]
    return False, False


@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text; 401 without valid credentials, 403 for a known non-admin (signed in,
    or sending another role's API token — an agent's Bearer token is no anonymous caller)."""
    allowed, identified = _caller(request)
    if not allowed:
        status = 403 if identified else 401
        return HttpResponse(
            "metrics need KUAE_METRICS_TOKEN or an admin\n",
            status=status,
            content_type="text/plain",
        )
    registry = CollectorRegistry()
    registry.register(FleetCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
