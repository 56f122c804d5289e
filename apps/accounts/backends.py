"""Username and password, behind the sign-in throttle whichever view asks."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from apps.accounts.audit import login_attempt_release, login_attempt_reserve
from apps.accounts.models import User


class ThrottledModelBackend(ModelBackend):
    """Django's password check, refused while this (account, address) or the address is
    throttled and the browser is no known device for the account (apps.accounts.audit).
    The dashboard's and the admin's sign-in pages check first and answer 429; this is the
    floor for any other path to `authenticate()`, and the only check that holds when many
    attempts arrive at once: the attempt is written down before its password is checked
    (`login_attempt_reserve`), so no more than the limit are ever checked. A refusal here
    marks the request (`THROTTLED`) so the sign-in pages answer 429."""

    THROTTLED = "kuae_login_throttled"

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        name = username if username is not None else kwargs.get(User.USERNAME_FIELD)
        if name is None:
            return None
        reservation = login_attempt_reserve(request, str(name))
        if reservation is None:
            if request is not None:
                setattr(request, self.THROTTLED, True)
            raise PermissionDenied("too many failed sign-ins")  # audited as throttled
        user = super().authenticate(request, username, password, **kwargs)
        if not isinstance(user, User):
            return None  # the reservation stands as the failure
        login_attempt_release(reservation)
        return user
