"""Sign-in with a throttle: too many failures for an (account, address), or for an address
→ 429, on the dashboard's sign-in page and the admin's alike; a browser that signed in as
the account before is not held back by them (apps.accounts.audit, docs/operations.md)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render, resolve_url

from apps.accounts.audit import (
    Kind,
    audit,
    known_device,
    login_key,
    login_throttled,
    remember_device,
)
from apps.accounts.backends import (
    DIRECTORY_UNAVAILABLE,
    NO_MAPPED_GROUP,
    ThrottledModelBackend,
)
from apps.accounts.choices import Role
from apps.accounts.demo import DEMO_LOGINS


def _throttled_by_backend(request: HttpRequest) -> bool:
    """The backend refused the attempt unchecked: others sent at the same moment reached
    the limit after this page's own look (apps.accounts.backends)."""
    return bool(getattr(request, ThrottledModelBackend.THROTTLED, False))


def _directory_answer(request: HttpRequest) -> tuple[dict[str, Any], int] | None:
    """The page's context and status when the directory, not a wrong password, decided the
    sign-in (a directory backend marked the request): in no mapped group → 403; the
    directory unreachable or answering with an error → 503. None otherwise."""
    if getattr(request, NO_MAPPED_GROUP, None) is not None:
        return {"no_mapped_group": True}, 403
    unavailable = getattr(request, DIRECTORY_UNAVAILABLE, None)
    if unavailable is not None:
        return {"directory_unavailable": unavailable}, 503
    return None


def _refused(request: HttpRequest, username: str) -> bool:
    """Audit and say so when a sign-in attempt is throttled."""
    if not login_throttled(request, username):
        return False
    key = login_key(username)
    audit(Kind.LOGIN_THROTTLED, request, key, known_device(request, key) or "")
    return True


class LoginView(auth_views.LoginView):
    """Django's sign-in page, refusing to check passwords while throttled."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        username = request.POST.get("username", "")[:150]
        if _refused(request, username):
            # An unbound form: the password is not even looked at.
            form = self.get_form_class()(request, initial={"username": username})
            context = self.get_context_data(form=form, throttled=True)
            return self.render_to_response(context, status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: Any) -> HttpResponse:
        if _throttled_by_backend(self.request):
            context = self.get_context_data(form=form, throttled=True)
            return self.render_to_response(context, status=429)
        directory = _directory_answer(self.request)
        if directory is not None:
            extra, status = directory
            return self.render_to_response(self.get_context_data(form=form, **extra), status=status)
        return super().form_invalid(form)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        """The demo's logins, listed on the sign-in page of the demo only (KUAE_DEMO); the
        OpenID Connect provider's name when it is configured."""
        context = super().get_context_data(**kwargs)
        if settings.DEMO:
            context["demo_logins"] = [(name, Role(role).label) for name, role in DEMO_LOGINS]
        if settings.KUAE_OIDC_ISSUER:  # "Sign in with …" (docs/sign-in.md, OpenID Connect)
            context["oidc_name"] = settings.KUAE_OIDC_NAME
        return context

    def get_default_redirect_url(self) -> str:
        """Where a sign-in with no `next` lands: a manager on the weekly report, which is
        what managers read (docs/pages.md, Signing in); everyone else on the
        overview."""
        user = getattr(self.request, "user", None)
        if getattr(user, "role", None) == Role.MANAGER:
            return resolve_url("weekly-report")
        return super().get_default_redirect_url()

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        remember_device(self.request, response, form.get_user().get_username())
        return response


def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's sign-in (`/admin/login/`) behind the same throttle: a throttled attempt
    gets the dashboard's "too many failed sign-ins" page, 429, the password unchecked."""
    if request.method == "POST" and _refused(request, request.POST.get("username", "")[:150]):
        return render(request, "registration/login.html", {"throttled": True}, status=429)
    response = admin.site.login(request)
    if _throttled_by_backend(request):
        return render(request, "registration/login.html", {"throttled": True}, status=429)
    directory = _directory_answer(request)
    if directory is not None:
        return render(request, "registration/login.html", directory[0], status=directory[1])
    if request.method == "POST" and response.status_code == 302 and request.user.is_authenticated:
        remember_device(request, response, request.user.get_username())
    return response
