from django.contrib import admin

from apps.common.admin_kinds import SystemWrittenAdmin
from apps.health.models import CheckResult, CheckRun, CheckSchedule, Thresholds


@admin.register(CheckSchedule)
class CheckScheduleAdmin(admin.ModelAdmin):
    list_display = ("cluster", "kind", "interval_s", "enabled", "next_due_at")
    list_editable = ("interval_s", "enabled")
    list_filter = ("cluster", "kind", "enabled")


@admin.register(Thresholds)
class ThresholdsAdmin(admin.ModelAdmin):
    list_display = ("cluster", "values", "updated_at", "updated_by")


@admin.register(CheckRun)
class CheckRunAdmin(SystemWrittenAdmin):
    """Runs are started by the schedule or "Run now" on the Health page, never here."""

    list_display = ("id", "cluster", "kind", "status", "started_at", "duration_s", "requested_by")
    list_filter = ("cluster", "kind", "status")


@admin.register(CheckResult)
class CheckResultAdmin(SystemWrittenAdmin):
    """Results are written by the checks (and judge a node's state), never by hand."""

    list_display = ("cluster", "kind", "target", "status", "at", "since")
    list_filter = ("cluster", "kind", "status")
    search_fields = ("target", "message")
    raw_id_fields = ("node", "job", "run")
