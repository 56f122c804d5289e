from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from apps.accounts.models import ApiToken, User


@admin.register(User)
class KuaeUserAdmin(UserAdmin):
    list_display = ("username", "role", "is_active", "last_login")
    list_filter = ("role", "is_active")
    fieldsets = (*UserAdmin.fieldsets, ("Role", {"fields": ("role",)}))


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("user", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("key_hash", "prefix", "created_at", "last_used_at")
