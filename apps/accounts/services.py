"""Writes for users and tokens."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apps.accounts.choices import Role
from apps.accounts.models import ApiToken, User


@transaction.atomic
def user_create_or_update(*, username: str, role: str, password: str | None = None) -> User:
    """Create the user (or update its role and password) — used by `create_user`."""
    if role not in Role.values:
        raise ValueError(f"unknown role {role!r}; one of {', '.join(Role.values)}")
    user, _ = User.objects.get_or_create(username=username)
    user.role = role
    user.is_staff = role == Role.ADMIN
    user.is_superuser = role == Role.ADMIN
    if password:
        user.set_password(password)
    elif not user.has_usable_password():
        user.set_unusable_password()
    user.save()
    return user


def token_issue(*, user: User) -> str:
    """Issue a new API token and return its raw value."""
    return ApiToken.issue(user)


def token_revoke(*, user: User) -> int:
    """Revoke every live token of `user`; returns how many were revoked."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
