"""Sign-in with a throttle: too many failures for a username or an address → 429."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse

from apps.accounts.audit import Kind, audit, login_throttled


class LoginView(auth_views.LoginView):
    """Django's sign-in page, refusing to check passwords while throttled."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        username = request.POST.get("username", "")[:150]
        if login_throttled(request, username):
            audit(Kind.LOGIN_THROTTLED, request, username)
            # An unbound form: the password is not even looked at.
            form = self.get_form_class()(request, initial={"username": username})
            context = self.get_context_data(form=form, throttled=True)
            return self.render_to_response(context, status=429)
        return super().post(request, *args, **kwargs)
