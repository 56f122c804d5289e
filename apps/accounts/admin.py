"""The admin of users, tokens and the audit log."""

from __future__ import annotations

from typing import ClassVar

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from apps.accounts.models import ApiToken, AuditEvent, User


@admin.register(User)
class KuaeUserAdmin(UserAdmin):
    """Users and their roles; the fleet's admin adds an agent's scope (apps/fleet/admin.py)."""

    list_display: tuple[str, ...] = ("username", "role", "is_active", "last_login")
    list_filter = ("role", "is_active")
    fieldsets = (*(UserAdmin.fieldsets or ()), ("Role", {"fields": ("role",)}))


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens, by prefix; never the raw value. The fleet's admin adds what each writes for."""

    list_display: tuple[str, ...] = ("user", "prefix", "created_at", "last_used_at", "revoked_at")
    list_select_related: ClassVar[tuple[str, ...]] = ("user",)
    readonly_fields: ClassVar[tuple[str, ...]] = (
        "key_hash",
        "prefix",
        "created_at",
        "last_used_at",
    )


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """The audit log, read-only: nobody edits or deletes history."""

    list_display = ("at", "kind", "username", "ip", "device", "method", "path")
    list_filter = ("kind",)
    search_fields = ("username", "path", "ip", "device")
    date_hierarchy = "at"

    def has_add_permission(self, request) -> bool:  # noqa: ANN001
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # noqa: ANN001
        return False

    def has_delete_permission(self, request, obj=None) -> bool:  # noqa: ANN001
        return False
