"""Users with one role each, and hashed, revocable API tokens."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import AbstractUser
from django.db import models

from apps.accounts.choices import Role


class User(AbstractUser):
    """A person or machine account; `role` decides what it may do (CONTRACT §1)."""

    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MANAGER)

    def has_role(self, roles: frozenset[str]) -> bool:
        """True when this active user's role is one of `roles` (superusers count as admin)."""
        if not self.is_active:
            return False
        return self.role in roles or (self.is_superuser and Role.ADMIN in roles)


def hash_token(raw: str) -> str:
    """SHA-256 of a token: tokens are random and long, so a fast hash is the right one."""
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiToken(models.Model):
    """An API token; only its hash is stored, and it can be revoked."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="tokens")
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=8, help_text="first characters, to tell tokens apart")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user.username} {self.prefix}…"

    @classmethod
    def issue(cls, user: User) -> str:
        """Create a token for `user` and return the raw value (shown once, never stored)."""
        raw = secrets.token_urlsafe(32)
        cls.objects.create(user=user, key_hash=hash_token(raw), prefix=raw[:8])
        return raw
