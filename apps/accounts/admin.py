from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from apps.accounts.models import ApiToken, AuditEvent, User


@admin.register(User)
class KuaeUserAdmin(UserAdmin):
    list_display = ("username", "role", "is_active", "last_login")
    list_filter = ("role", "is_active")
    fieldsets = (*UserAdmin.fieldsets, ("Role", {"fields": ("role",)}))


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("user", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("key_hash", "prefix", "created_at", "last_used_at")


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """The audit log, read-only: nobody edits or deletes history."""

    list_display = ("at", "kind", "username", "ip", "method", "path")
    list_filter = ("kind",)
    search_fields = ("username", "path", "ip")
    date_hierarchy = "at"

    def has_add_permission(self, request) -> bool:  # noqa: ANN001
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # noqa: ANN001
        return False

    def has_delete_permission(self, request, obj=None) -> bool:  # noqa: ANN001
        return False
