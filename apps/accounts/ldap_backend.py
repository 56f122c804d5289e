"""LDAP / Active Directory sign-in (docs/sign-in.md): django-auth-ldap's backend behind the
sign-in throttle, with the role taken from the person's directory groups at every sign-in.

- The person is found with `KUAE_LDAP_USER_FILTER` under `KUAE_LDAP_USER_SEARCH_BASE`
  (bound as `KUAE_LDAP_BIND_DN`), and their password checked by binding as them.
- Their groups: the DNs of the groups under `KUAE_LDAP_GROUP_SEARCH_BASE` that list them as
  `member` (`KUAE_LDAP_GROUPS=member`, OpenLDAP's groupOfNames), or their own `memberOf`
  (`KUAE_LDAP_GROUPS=memberOf`, Active Directory). `KUAE_ROLE_GROUPS` turns them into a
  role; none mapped → `NoMappedGroup`, and the sign-in page says why.
- A new person becomes a user with an unusable password (the directory holds it); a local
  account of the same name (one with a password of its own, or an agent) is never signed
  in or changed through the directory.
- The directory unreachable, or answering with an error, marks the request
  (`DIRECTORY_UNAVAILABLE`): the sign-in page says so instead of "wrong password", never a 500.
"""

from __future__ import annotations

import logging
from typing import Any

import ldap
from django.conf import settings
from django.http import HttpRequest
from django_auth_ldap.backend import LDAPBackend, ldap_error
from ldap.filter import escape_filter_chars

from apps.accounts.backends import DIRECTORY_UNAVAILABLE, NO_MAPPED_GROUP, SignInThrottle
from apps.accounts.choices import Role
from apps.accounts.directory import NoMappedGroup, RoleGroups, apply_directory_role
from apps.accounts.models import User

log = logging.getLogger(__name__)

_UNREACHABLE = (ldap.SERVER_DOWN, ldap.TIMEOUT, ldap.CONNECT_ERROR)


class DirectoryBackend(SignInThrottle, LDAPBackend):
    """django-auth-ldap's LDAPBackend, throttled like local sign-in, the role following the
    groups (apps.accounts.directory)."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        name = username if username is not None else kwargs.get(User.USERNAME_FIELD)
        if name is None or not password:
            return None
        return self.attempt(request, str(name), lambda: self._check(request, str(name), password))

    def _check(self, request: HttpRequest | None, name: str, password: str) -> object:
        """django-auth-ldap's check; a person in no mapped group marks the request for the
        sign-in page, then stops Django (PermissionDenied, counted as a failure)."""
        try:
            return super().authenticate(request, username=name, password=password)
        except NoMappedGroup as refusal:
            if request is not None:
                setattr(request, NO_MAPPED_GROUP, refusal)
            raise

    def authenticate_ldap_user(self, ldap_user: Any, password: str) -> User | None:
        """The directory checked the password and found the user: give them the role their
        groups grant now."""
        user = super().authenticate_ldap_user(ldap_user, password)
        if isinstance(user, User) and apply_directory_role(user, ldap_user.kuae_role):
            log.info("%s: role from the directory's groups now %s", user.username, user.role)
        return user

    def get_or_build_user(self, username: str, ldap_user: Any) -> tuple[User, bool]:
        """The user for this directory person (built unsaved when new, with the role their
        groups grant); a local account of the same name is left alone (no sign-in)."""
        user, built = super().get_or_build_user(username, ldap_user)
        if not built and (user.has_usable_password() or user.role == Role.AGENT):
            raise ldap_user.AuthenticationFailed(f"{username} is a local account")
        groups = group_dns(ldap_user)
        role = RoleGroups.parse(settings.KUAE_ROLE_GROUPS).role_for(groups)
        if role is None:
            log.info(
                "%s refused: none of %d directory groups maps to a role", username, len(groups)
            )
            raise NoMappedGroup(username, "the directory")
        ldap_user.kuae_role = role
        if built:
            user.role = role
        return user, built


def group_dns(ldap_user: Any) -> list[str]:
    """The DNs of the person's groups: their `memberOf`, or the groups under
    KUAE_LDAP_GROUP_SEARCH_BASE (matching KUAE_LDAP_GROUP_FILTER) that list them as
    `member`. A directory error propagates (the request is marked unavailable), so a
    directory that fails mid-sign-in never reads as "in no group"."""
    if settings.KUAE_LDAP_GROUPS == "memberof":
        return [str(dn) for dn in (ldap_user.attrs or {}).get("memberOf", [])]
    member = escape_filter_chars(ldap_user.dn)
    found = ldap_user.connection.search_s(
        settings.KUAE_LDAP_GROUP_SEARCH_BASE,
        ldap.SCOPE_SUBTREE,
        f"(&{settings.KUAE_LDAP_GROUP_FILTER}(member={member}))",
        ["1.1"],  # the DNs only
    )
    return [dn for dn, _ in found if dn is not None]


def _directory_error(
    sender: Any,
    context: str,
    user: Any,
    request: HttpRequest | None,
    exception: Exception,
    **kwargs: Any,
) -> None:
    """django-auth-ldap caught a directory error (it then fails the sign-in): mark the
    request so the page says the directory could not be asked, not "wrong password"."""
    unreachable = isinstance(exception, _UNREACHABLE)
    log.warning("LDAP %s: %s", "unreachable" if unreachable else "error", exception)
    if request is not None:
        setattr(request, DIRECTORY_UNAVAILABLE, "unreachable" if unreachable else "error")


ldap_error.connect(_directory_error, sender=DirectoryBackend, dispatch_uid="kuae-ldap-error")
