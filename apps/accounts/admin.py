"""The admin of users, tokens and the audit log."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from apps.accounts.models import ApiToken, AuditEvent, User
from apps.common.admin_kinds import HistoryAdmin


@admin.register(User)
class KuaeUserAdmin(UserAdmin):
    """Users and their roles; the fleet's admin adds an agent's scope (apps/fleet/admin.py)."""

    list_display: tuple[str, ...] = ("username", "role", "is_active", "last_login")
    list_filter = ("role", "is_active")
    # Who it is, then what it may do (its role, and an agent's scope: the inline, placed
    # after the role by templates/admin/accounts/user/change_form.html), then the rest.
    fieldsets = (
        ("Account", {"fields": ("username", "first_name", "last_name", "email")}),
        ("Role", {"fields": ("role",)}),
        ("Password", {"fields": ("password",)}),
        (
            "Permissions",
            {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")},
        ),
        ("Important dates", {"fields": ("last_login", "date_joined")}),
    )
    add_form_template = "admin/accounts/user/add_form.html"
    add_fieldsets = (
        ("Account", {"fields": ("username",)}),
        ("Role", {"fields": ("role",)}),
        ("Password", {"fields": ("usable_password", "password1", "password2")}),
    )


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens, by prefix; never the raw value. The fleet's admin adds what each writes for.

    "Add" issues a working token for the chosen user, as `create_user` does, and shows its
    raw value once, on the page that answers the add (never in a message or a cookie); the
    user's other tokens stay live (set `revoked at` on one to revoke it). A token's user,
    hash and prefix are never edited."""

    list_display: tuple[str, ...] = ("user", "prefix", "created_at", "last_used_at", "revoked_at")
    list_select_related: ClassVar[tuple[str, ...]] = ("user",)
    readonly_fields: ClassVar[tuple[str, ...]] = (
        "key_hash",
        "prefix",
        "created_at",
        "last_used_at",
    )

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> Any:  # noqa: ANN401
        """Adding asks only whose token it is; the rest is issued."""
        if obj is None:
            return ("user",)
        return ("user", *self.get_readonly_fields(request, obj), "revoked_at")

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> Any:  # noqa: ANN401
        """A token once issued keeps its user; only its revocation is edited."""
        if obj is None:
            return ()
        return ("user", *super().get_readonly_fields(request, obj))

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:  # noqa: ANN401
        """A new token gets a fresh key; its raw value is kept for this response only."""
        if not change:
            request._kuae_raw_token = obj.new_key()  # type: ignore[attr-defined]
        super().save_model(request, obj, form, change)

    def response_add(
        self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None
    ) -> HttpResponse:
        """The raw token, shown once on this page (not "added successfully" and a redirect)."""
        raw = getattr(request, "_kuae_raw_token", None)
        if raw is None:
            return super().response_add(request, obj, post_url_continue)
        opts = self.opts
        context = {
            **self.admin_site.each_context(request),
            "opts": opts,
            "title": f"API token issued for {obj.user.username}",
            "token": obj,
            "raw": raw,
        }
        response = TemplateResponse(request, "admin/accounts/apitoken/issued.html", context)
        response["Cache-Control"] = "no-store"
        return response


@admin.register(AuditEvent)
class AuditEventAdmin(HistoryAdmin):
    """The audit log, read-only: nobody edits or deletes history."""

    list_display = ("at", "kind", "username", "ip", "device", "method", "path")
    list_filter = ("kind",)
    search_fields = ("username", "path", "ip", "device")
    date_hierarchy = "at"
