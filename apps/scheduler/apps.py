"""The scheduler app: the Slurm connection, live sync and actuation (docs/slurm.md)."""

from django.apps import AppConfig


class SchedulerConfig(AppConfig):
    """Slurm both ways: jobs and node states in, drains and resumes out."""

    name = "apps.scheduler"
    label = "scheduler"
