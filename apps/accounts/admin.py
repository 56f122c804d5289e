from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from apps.accounts.models import AgentScope, ApiToken, AuditEvent, User, describe_scope


class AgentScopeInline(admin.StackedInline):
    """Where an agent's token may write (docs/operations.md, Agent tokens): none → the whole fleet
    (a relay); a cluster → that cluster; a cluster and a hostlist → those nodes and the jobs on
    them."""

    model = AgentScope
    can_delete = True
    extra = 0
    max_num = 1
    fields = ("cluster", "hostlist", "node_count")
    readonly_fields = ("node_count",)
    verbose_name_plural = "agent scope (agents only; none: the whole fleet)"

    @admin.display(description="nodes named")
    def node_count(self, scope: AgentScope) -> str:
        return f"{len(scope.hostnames):,}" if scope.hostlist else "every node of the cluster"


@admin.register(User)
class KuaeUserAdmin(UserAdmin):
    list_display = ("username", "role", "scope", "is_active", "last_login")
    list_filter = ("role", "is_active")
    list_select_related = ("agent_scope__cluster",)
    fieldsets = (*UserAdmin.fieldsets, ("Role", {"fields": ("role",)}))
    inlines = (AgentScopeInline,)

    @admin.display(description="writes for")
    def scope(self, user: User) -> str:
        if user.role != "agent":
            return "—"
        return describe_scope(getattr(user, "agent_scope", None))


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("user", "prefix", "scope", "created_at", "last_used_at", "revoked_at")
    list_select_related = ("user__agent_scope__cluster",)
    readonly_fields = ("key_hash", "prefix", "scope", "created_at", "last_used_at")

    @admin.display(description="writes for")
    def scope(self, token: ApiToken) -> str:
        if token.user.role != "agent":
            return "—"
        return describe_scope(getattr(token.user, "agent_scope", None))


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
