"""The pages' language for a signed-in person (docs/pages.md, Language).

Django's `LocaleMiddleware` picks the language from the switch's cookie, else the
browser's `Accept-Language`; it runs before the user is known. `UserLanguageMiddleware`,
after `AuthenticationMiddleware`, then puts the person's own setting (`User.language`)
over both. The header's switch saves the choice to the person when signed in (`set_language`
below), so for a signed-in person the switch and the setting never disagree: the latest
choice wins, on every browser they use. A blank setting follows the browser.
"""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST
from django.views.i18n import set_language as django_set_language

from apps.accounts.models import User

LANGUAGE_CODES = frozenset(code for code, _name in settings.LANGUAGES)


def user_language(request: HttpRequest) -> str:
    """The signed-in person's own language setting, or '' (none: follow the browser)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return ""
    code = getattr(user, "language", "") or ""
    return code if code in LANGUAGE_CODES else ""


def languages(request: HttpRequest) -> dict[str, object]:
    """The header switch's languages, each named in its own words (settings.LANGUAGES)."""
    return {"language_choices": settings.LANGUAGES}


API_PREFIX = "/api/v1/"


class UserLanguageMiddleware:
    """Activate the signed-in person's language setting, over the cookie and the browser;
    the API (`/api/v1/`) answers in English whatever is asked, so its messages and labels
    are the same for every script (API fields, slugs and CSV columns never change)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        code = settings.LANGUAGE_CODE if request.path.startswith(API_PREFIX) else ""
        code = code or user_language(request)
        if code:
            translation.activate(code)
            request.LANGUAGE_CODE = translation.get_language()
        return self.get_response(request)


@require_POST
def set_language(request: HttpRequest) -> HttpResponse:
    """Django's `set_language` (the cookie, then back to `next`), and the choice saved as the
    signed-in person's setting so that it follows them."""
    response = django_set_language(request)
    code = request.POST.get("language", "")
    user = request.user
    if code in LANGUAGE_CODES and isinstance(user, User) and user.language != code:
        user.language = code
        user.save(update_fields=["language"])
    return response


class LanguageForm(forms.Form):
    """A person's language setting: one of the pages' languages, or the browser's."""

    language = forms.ChoiceField(
        label=gettext_lazy("Language of the pages"),
        required=False,
        choices=[("", gettext_lazy("The browser's language")), *settings.LANGUAGES],
        widget=forms.RadioSelect,
    )


@login_required
@require_http_methods(["GET", "POST"])
def my_settings(request: HttpRequest) -> HttpResponse:
    """The signed-in person's own settings: the language of the pages."""
    user = request.user
    assert isinstance(user, User)  # login_required: never anonymous here
    form = LanguageForm(request.POST or None, initial={"language": user.language})
    if request.method == "POST" and form.is_valid():
        code = form.cleaned_data["language"]
        user.language = code
        user.save(update_fields=["language"])
        if code:
            translation.activate(code)
        messages.success(request, _("Saved: the pages' language."))
        response = redirect("my-settings")
        if code:
            response.set_cookie(
                settings.LANGUAGE_COOKIE_NAME,
                code,
                secure=settings.LANGUAGE_COOKIE_SECURE,
                samesite="Lax",  # as settings.LANGUAGE_COOKIE_SAMESITE
            )
        else:  # the browser's language: no cookie left to outweigh it
            response.delete_cookie(settings.LANGUAGE_COOKIE_NAME)
        return response
    status = 400 if request.method == "POST" else 200
    return render(request, "accounts/my_settings.html", {"form": form}, status=status)
