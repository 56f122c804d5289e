from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import admin

from apps.accounts.admin import ApiTokenAdmin, KuaeUserAdmin
from apps.accounts.choices import Role
from apps.accounts.models import ApiToken, User
from apps.common.admin_kinds import HistoryAdmin, SystemWrittenAdmin
from apps.common.hostnames import hostname_clean
from apps.fleet.destinations import slurmrestd_url_refusal, url_refusal
from apps.fleet.models import GPU, AgentScope, Cluster, Node, NodeStateChange, describe_scope
from apps.fleet.mounts import mounts_clean
from apps.fleet.vendors import peaks_error


class NodeForm(forms.ModelForm):
    """A node as the admin edits it: its hostname and exporter_url judged as `POST nodes/`
    judges them."""

    class Meta:
        model = Node
        fields = "__all__"  # noqa: DJ007 - the admin's own choice of fields applies

    def clean_hostname(self) -> str:
        try:  # a DNS name, as everywhere a node is named (docs/operations.md, Limits)
            return hostname_clean(self.cleaned_data.get("hostname") or "")
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean_exporter_url(self) -> str:
        value = self.cleaned_data.get("exporter_url") or ""
        refused = url_refusal(value, settings.KUAE_SCRAPE_ALLOW) if value else None
        if refused:
            raise forms.ValidationError(f"the scraper may not connect there: {refused}")
        return value


class ClusterForm(forms.ModelForm):
    """A cluster as the admin edits it: its Prometheus judged as `PATCH clusters/{name}/`
    judges it; the bearer token is entered here only (never shown back, never in the API)."""

    class Meta:
        model = Cluster
        fields = "__all__"  # noqa: DJ007 - the admin's own choice of fields applies
        widgets = {"prometheus_token": forms.PasswordInput(render_value=False)}

    def clean_prometheus_url(self) -> str:
        value = self.cleaned_data.get("prometheus_url") or ""
        refused = url_refusal(value, settings.KUAE_SCRAPE_ALLOW) if value else None
        if refused:
            raise forms.ValidationError(f"KUAE may not connect there: {refused}")
        return value

    def clean_slurm_url(self) -> str:
        value = self.cleaned_data.get("slurm_url") or ""
        kind = self.cleaned_data.get("slurm_kind") or getattr(self.instance, "slurm_kind", "")
        if value and kind == "rest":
            refused = slurmrestd_url_refusal(value, settings.KUAE_SCRAPE_ALLOW)
            if refused:
                raise forms.ValidationError(f"KUAE may not send the Slurm JWT there: {refused}")
        return value

    def clean_peak_tflops_by_model(self) -> dict[str, float]:
        """docs/formulas.md, MFU: model name → positive TFLOP/s, else a form error on it."""
        value = self.cleaned_data.get("peak_tflops_by_model") or {}
        problem = peaks_error(value)
        if problem:
            raise forms.ValidationError(problem)
        return {name.strip(): float(peak) for name, peak in value.items()}

    def clean_required_mounts(self) -> list[str]:
        """docs/checks.md, `storage`: absolute paths, none twice, as the API judges them."""
        try:
            return mounts_clean(self.cleaned_data.get("required_mounts") or [])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean_prometheus_token(self) -> str:
        # A password field shows nothing back: left empty, the token stays as it was.
        value = self.cleaned_data.get("prometheus_token") or ""
        return value or (self.instance.prometheus_token if self.instance.pk else "")


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    """A cluster's settings. Its automation is paused and resumed with "Pause automation" on
    the overview (or `POST clusters/{name}/automation/`), which records who and when: shown
    here, never edited (docs/on-call.md)."""

    form = ClusterForm
    list_display = ("name", "gpu_model", "peak_tflops_per_gpu", "gpus_per_node", "simulated")
    readonly_fields = ("automation_paused", "automation_reason", "automation_by", "automation_at")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "name",
                    "gpu_model",
                    "peak_tflops_per_gpu",
                    "peak_tflops_by_model",
                    "gpus_per_node",
                    "simulated",
                )
            },
        ),
        ("Slurm", {"fields": ("slurm_kind", "slurm_url", "actuation", "queue")}),
        ("Prometheus", {"fields": ("prometheus_url", "prometheus_token")}),
        ("Storage", {"fields": ("required_mounts",)}),
        (
            "Automation",
            {
                "fields": readonly_fields,
                "description": "Paused and resumed with Pause automation on the overview, "
                "which records who paused it, when and why.",
            },
        ),
    )


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    form = NodeForm
    list_display = ("hostname", "cluster", "rack", "state", "last_seen_at")
    list_filter = ("cluster", "state")
    search_fields = ("hostname", "rack")
    readonly_fields = ("state", "state_reason", "state_changed_at")


@admin.register(NodeStateChange)
class NodeStateChangeAdmin(HistoryAdmin):
    """A node's state history: written by the node's state changes, never by hand."""

    list_display = ("node", "state", "at", "source", "by")
    list_filter = ("state", "source")
    search_fields = ("node__hostname", "reason")
    raw_id_fields = ("node",)


@admin.register(GPU)
class GPUAdmin(SystemWrittenAdmin):
    """GPUs are reported by telemetry, never entered by hand."""

    list_display = ("node", "index", "vendor", "model", "updated_at")
    search_fields = ("node__hostname", "uuid")
    raw_id_fields = ("node",)


class AgentScopeInline(admin.StackedInline):
    """Where an agent's token may write (docs/operations.md#agent-tokens-and-scopes): none →
    the whole fleet (a relay); a cluster → that cluster; a cluster and a hostlist → those
    nodes and the jobs on them."""

    model = AgentScope
    can_delete = True
    extra = 0
    max_num = 1
    fields = ("cluster", "hostlist", "node_count")
    readonly_fields = ("node_count",)
    verbose_name_plural = "agent scope (agents only; none: the whole fleet)"

    @admin.display(description="nodes named")
    def node_count(self, scope: AgentScope) -> str:
        """How many nodes the hostlist names, or that it is every node of the cluster."""
        return f"{len(scope.hostnames):,}" if scope.hostlist else "every node of the cluster"


def writes_for(user: User) -> str:
    """What an agent's writes are limited to (`whole fleet` when nothing); a dash for people."""
    if user.role != Role.AGENT:
        return "—"
    return describe_scope(getattr(user, "agent_scope", None))


# The scope is the fleet's (accounts knows no cluster): the user and token admins gain it here.
admin.site.unregister(User)
admin.site.unregister(ApiToken)


@admin.register(User)
class ScopedUserAdmin(KuaeUserAdmin):
    """Users, with an agent's scope edited inline and shown in the list."""

    list_display = ("username", "role", "scope", "is_active", "last_login")
    list_select_related = ("agent_scope__cluster",)
    inlines = (*KuaeUserAdmin.inlines, AgentScopeInline)

    @admin.display(description="writes for")
    def scope(self, user: User) -> str:
        """What the user's writes are limited to."""
        return writes_for(user)


@admin.register(ApiToken)
class ScopedApiTokenAdmin(ApiTokenAdmin):
    """Tokens, with what each writes for."""

    list_display = ("user", "prefix", "scope", "created_at", "last_used_at", "revoked_at")
    list_select_related = ("user__agent_scope__cluster",)
    readonly_fields = ("key_hash", "prefix", "scope", "created_at", "last_used_at")

    @admin.display(description="writes for")
    def scope(self, token: ApiToken) -> str:
        """What the token's writes are limited to."""
        return writes_for(token.user)
