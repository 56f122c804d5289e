"""The two pages of OpenID Connect sign-in (docs/sign-in.md, OpenID Connect): `/oidc/
authenticate/` sends the browser to the provider, `/oidc/callback/` takes it back. Both are
404 unless KUAE_OIDC_ISSUER is set. Whatever goes wrong is a page that says what: a person in
no mapped group (403), the provider unreachable (503), a sign-in that did not complete (400);
never a 500."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render, resolve_url
from django.views.generic import View
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from apps.accounts.choices import Role
from apps.accounts.directory import NoMappedGroup
from apps.accounts.oidc import (
    DirectoryOIDCBackend,
    LocalAccountClash,
    ProviderUnreachable,
    discover,
    enabled,
    oidc_setting,
    provider_name,
)

TEMPLATE = "registration/oidc_problem.html"


def problem(request: HttpRequest, kind: str, status: int, username: str = "") -> HttpResponse:
    """The page that says why a sign-in with the provider did not happen."""
    context = {"kind": kind, "provider": provider_name(), "username": username}
    return render(request, TEMPLATE, context, status=status)


class SignInStart(OIDCAuthenticationRequestView):
    """Send the browser to the provider's authorization endpoint (discovered lazily)."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, **kwargs: Any) -> None:
        # The library reads the endpoint here; it is discovered in get() instead.
        View.__init__(self, **kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not enabled():
            raise Http404("OpenID Connect sign-in is not configured")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = discover().authorization
        except ProviderUnreachable:
            return problem(request, "unreachable", 503)
        self.OIDC_RP_CLIENT_ID = oidc_setting("OIDC_RP_CLIENT_ID")
        return super().get(request)  # type: ignore[no-any-return]


class SignInReturn(OIDCAuthenticationCallbackView):
    """The provider's answer: sign the person in, or say why not."""

    get_settings = staticmethod(oidc_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not enabled():
            raise Http404("OpenID Connect sign-in is not configured")
        return super().get(request)  # type: ignore[no-any-return]

    @property
    def success_url(self) -> str:
        """`next` when the sign-in began with one; else a manager's weekly report, or the
        overview (as the password sign-in, apps.accounts.views.LoginView)."""
        next_url = self.request.session.get("oidc_login_next")
        if next_url:
            return str(next_url)
        if getattr(self.user, "role", None) == Role.MANAGER:
            return resolve_url("weekly-report")
        return resolve_url(settings.LOGIN_REDIRECT_URL)

    def login_failure(self) -> HttpResponse:
        refusal = getattr(self.request, DirectoryOIDCBackend.REFUSAL, None)
        if isinstance(refusal, NoMappedGroup):
            return problem(self.request, "no-group", 403, refusal.username)
        if isinstance(refusal, LocalAccountClash):
            return problem(self.request, "local-account", 403, refusal.username)
        if isinstance(refusal, ProviderUnreachable):
            return problem(self.request, "unreachable", 503)
        if getattr(self, "user", None) is not None and not self.user.is_active:
            return problem(self.request, "inactive", 403, self.user.get_username())
        return problem(self.request, "failed", 400)
