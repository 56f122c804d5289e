"""Username and password, behind the sign-in throttle whichever view asks."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from apps.accounts.audit import login_throttled
from apps.accounts.models import User


class ThrottledModelBackend(ModelBackend):
    """Django's password check, refused while this (account, address) or the address is
    throttled and the browser is no known device for the account (apps.accounts.audit).
    The dashboard's and the admin's sign-in pages check first and answer 429; this is the
    floor for any other path to `authenticate()`."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        name = username if username is not None else kwargs.get(User.USERNAME_FIELD)
        if name is not None and login_throttled(request, str(name)):
            raise PermissionDenied("too many failed sign-ins")  # counted as a failure
        user = super().authenticate(request, username, password, **kwargs)
        return user if isinstance(user, User) else None
