"""Writes for users and tokens."""

from __future__ import annotations

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from apps.accounts import token_cache
from apps.accounts.choices import Role
from apps.accounts.models import ApiToken, User


@transaction.atomic
def user_create_or_update(
    *, username: str, role: str, password: str | None = None, check_password: bool = True
) -> User:
    """Create the user (or update its role and password) — used by `create_user`. A password
    must pass AUTH_PASSWORD_VALIDATORS (ValueError saying why), unless `check_password` is
    off: for the demo's published login and the tests' personas only."""
    if role not in Role.values:
        raise ValueError(f"unknown role {role!r}; one of {', '.join(Role.values)}")
    user, _ = User.objects.get_or_create(username=username)
    user.role = role
    user.is_staff = role == Role.ADMIN
    user.is_superuser = role == Role.ADMIN
    if password:
        if check_password:
            try:
                validate_password(password, user)
            except ValidationError as exc:
                raise ValueError("password refused: " + " ".join(exc.messages)) from exc
        user.set_password(password)  # saving it revokes the user's tokens (User.save)
    elif not user.has_usable_password():
        user.set_unusable_password()
    user.save()
    return user


@transaction.atomic
def token_issue(*, user: User) -> str:
    """Issue a new API token and return its raw value; the user's older tokens are revoked
    (docs/operations.md, Security notes: re-issue is how a token is rotated)."""
    token_revoke(user=user)
    return ApiToken.issue(user)


def token_revoke(*, user: User) -> int:
    """Revoke every live token of `user`; returns how many were revoked (this process
    forgets the tokens it remembered at once: apps/accounts/token_cache.py)."""
    revoked = ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    token_cache.forget_all()
    return revoked
