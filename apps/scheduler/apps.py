"""The scheduler app: the Slurm connection, live sync and actuation (docs/slurm.md)."""

from django.apps import AppConfig


class SchedulerConfig(AppConfig):
    """Slurm both ways: jobs and node states in, drains and resumes out."""

    name = "apps.scheduler"
    label = "scheduler"

    def ready(self) -> None:
        from apps.fleet import transitions
        from apps.scheduler.panels import panels_lend
        from apps.scheduler.services.actuation import actuation_request

        # A node's state change writes its drain or resume into the outbox in the change's
        # own transaction; the fleet calls it without knowing the scheduler (docs/slurm.md).
        transitions.follow(name="scheduler.actuation", follower=actuation_request)
        # The node page (fleet) shows what was sent to Slurm without knowing the scheduler.
        panels_lend()
