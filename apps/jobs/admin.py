from django.contrib import admin

from apps.common.admin_kinds import SystemWrittenAdmin
from apps.jobs.models import Checkpoint, Job


@admin.register(Job)
class JobAdmin(SystemWrittenAdmin):
    """Jobs come from Slurm's sync and the training agents, never from here."""

    list_display = ("id", "name", "cluster", "status", "gpu_count", "started_at", "ended_at")
    list_filter = ("cluster", "status")
    search_fields = ("name", "external_id")
    raw_id_fields = ("nodes",)


@admin.register(Checkpoint)
class CheckpointAdmin(SystemWrittenAdmin):
    """Checkpoints are reported by the training agents."""

    list_display = ("job", "step", "saved_at", "blocking_s")
    raw_id_fields = ("job",)
