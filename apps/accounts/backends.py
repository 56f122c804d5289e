"""Username and password, behind the sign-in throttle whichever view asks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from apps.accounts.audit import login_attempt_release, login_attempt_reserve, login_key
from apps.accounts.models import AuditEvent, User

# What a directory backend (apps.accounts.ldap_backend) marks the request with, for the
# sign-in pages (apps.accounts.views): the NoMappedGroup refusal; "unreachable" or "error".
NO_MAPPED_GROUP = "kuae_no_mapped_group"
DIRECTORY_UNAVAILABLE = "kuae_directory_unavailable"


class SignInThrottle:
    """The sign-in throttle, for every backend that checks a password (this module's model
    backend, the LDAP one of apps.accounts.ldap_backend): one attempt is written down once
    (`login_attempt_reserve`) however many backends check it, and released by the backend
    that signs the person in."""

    THROTTLED = "kuae_login_throttled"
    RESERVED = "kuae_login_reserved"

    def reserve(self, request: HttpRequest | None, username: str) -> AuditEvent:
        """This attempt's reservation: the one an earlier backend made for the same request
        and account, or a new one. Throttled: the request is marked (`THROTTLED`) and
        PermissionDenied stops every backend (audited as throttled)."""
        key = login_key(username)
        held = getattr(request, self.RESERVED, None) if request is not None else None
        if held is not None and held[0] == key:
            return held[1]
        reservation = login_attempt_reserve(request, username)
        if reservation is None:
            if request is not None:
                setattr(request, self.THROTTLED, True)
            raise PermissionDenied("too many failed sign-ins")
        if request is not None:
            setattr(request, self.RESERVED, (key, reservation))
        return reservation

    def release(self, request: HttpRequest | None, reservation: AuditEvent) -> None:
        """The attempt signed someone in: it is no failure."""
        login_attempt_release(reservation)
        if request is not None and hasattr(request, self.RESERVED):
            delattr(request, self.RESERVED)

    def attempt(
        self, request: HttpRequest | None, name: str, check: Callable[[], object]
    ) -> User | None:
        """One throttled attempt for account `name`: reserved before `check` (the backend's
        own password check) runs, released when it signs a user in; anything else leaves
        the reservation standing as the failure."""
        reservation = self.reserve(request, name)
        user = check()
        if not isinstance(user, User):
            return None
        self.release(request, reservation)
        return user


class ThrottledModelBackend(SignInThrottle, ModelBackend):
    """Django's password check, refused while this (account, address) or the address is
    throttled and the browser is no known device for the account (apps.accounts.audit).
    The dashboard's and the admin's sign-in pages check first and answer 429; this is the
    floor for any other path to `authenticate()`, and the only check that holds when many
    attempts arrive at once: the attempt is written down before its password is checked
    (`login_attempt_reserve`), so no more than the limit are ever checked. A refusal here
    marks the request (`THROTTLED`) so the sign-in pages answer 429."""

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
        return self.attempt(
            request,
            str(name),
            lambda: super(ThrottledModelBackend, self).authenticate(
                request, username, password, **kwargs
            ),
        )
