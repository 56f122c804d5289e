"""Targets per cluster, set by admins (docs/formulas.md, Targets: floors, never ceilings)."""

from __future__ import annotations

from django.contrib import admin

from apps.reports.models import ClusterTargets


@admin.register(ClusterTargets)
class ClusterTargetsAdmin(admin.ModelAdmin):
    """One row per cluster that differs from the defaults; the others read the defaults."""

    list_display = ("cluster", "effective_rate", "cluster_mtbf_days", "availability", "mfu")
    list_select_related = ("cluster",)
    readonly_fields = ("updated_at",)
