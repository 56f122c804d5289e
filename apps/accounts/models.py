"""Users with one role each, and hashed, revocable API tokens."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.accounts import token_cache
from apps.accounts.choices import Role


class User(AbstractUser):
    """A person or machine account; `role` decides what it may do (docs/api.md, Conventions)."""

    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MANAGER)
    # The pages' language for this person, over the browser's (docs/pages.md, Language);
    # blank: follow the browser's Accept-Language.
    language = models.CharField(
        _("language"),
        max_length=16,
        blank=True,
        default="",
        choices=settings.LANGUAGES,
        help_text=_("blank: the browser's language"),
    )

    def has_role(self, roles: frozenset[str]) -> bool:
        """True when this active user's role is one of `roles` (superusers count as admin)."""
        if not self.is_active:
            return False
        return self.role in roles or (self.is_superuser and Role.ADMIN in roles)

    def set_unusable_password(self) -> None:
        """No password sign-in any more: a password change, as far as tokens go."""
        self._password_dropped = self.has_usable_password()
        super().set_unusable_password()

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save; a password set (or dropped) since the last save — create_user, the admin's
        password form — revokes every token the user had (docs/api.md, Conventions). A hash
        upgraded at sign-in is no change: Django clears `_password` before that save."""
        changed = self.pk is not None and (
            getattr(self, "_password", None) is not None
            or getattr(self, "_password_dropped", False)
        )
        self._password_dropped = False
        super().save(*args, **kwargs)
        if changed:
            ApiToken.objects.filter(user=self, revoked_at__isnull=True).update(
                revoked_at=timezone.now()
            )
            token_cache.forget_all()  # what this process remembers (its post_save came first)


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

    class Meta:
        verbose_name = "API token"
        verbose_name_plural = "API tokens"

    def __str__(self) -> str:
        return f"{self.user.username} {self.prefix}…"

    @classmethod
    def issue(cls, user: User) -> str:
        """Create a token for `user` and return the raw value (shown once, never stored)."""
        token = cls(user=user)
        raw = token.new_key()
        token.save()
        return raw

    def new_key(self) -> str:
        """Give this (unsaved) token a fresh key: keep its hash and prefix, return the raw
        value, which is shown once and never stored."""
        raw = secrets.token_urlsafe(32)
        self.key_hash, self.prefix = hash_token(raw), raw[:8]
        return raw


class AuditEvent(models.Model):
    """Who signed in, who failed to, who was refused what. Written, never edited."""

    class Kind(models.TextChoices):
        LOGIN = "login", "Signed in"
        LOGIN_FAILED = "login_failed", "Sign-in failed"
        LOGIN_THROTTLED = "login_throttled", "Sign-in refused: too many failures"
        LOGOUT = "logout", "Signed out"
        DENIED = "denied", "Permission denied"

    at = models.DateTimeField(auto_now_add=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    username = models.CharField(max_length=150, blank=True, default="")
    ip = models.GenericIPAddressField(null=True, blank=True)
    method = models.CharField(max_length=8, blank=True, default="")
    path = models.CharField(max_length=500, blank=True, default="")
    device = models.CharField(
        max_length=32,
        blank=True,
        default="",
        help_text="a sign-in from a known device for this account: the device cookie's id",
    )

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["kind", "at"], name="audit_kind_at"),
            models.Index(fields=["username", "kind", "at"], name="audit_user_kind_at"),
            models.Index(fields=["ip", "kind", "at"], name="audit_ip_kind_at"),
            models.Index(fields=["device", "kind", "at"], name="audit_device_kind_at"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.kind} {self.username or '-'} {self.path}"
