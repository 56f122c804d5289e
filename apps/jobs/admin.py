from django.contrib import admin

from apps.jobs.models import Checkpoint, Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "cluster", "status", "gpu_count", "started_at", "ended_at")
    list_filter = ("cluster", "status")
    search_fields = ("name", "external_id")
    raw_id_fields = ("nodes",)


@admin.register(Checkpoint)
class CheckpointAdmin(admin.ModelAdmin):
    list_display = ("job", "step", "saved_at", "blocking_s")
    raw_id_fields = ("job",)
