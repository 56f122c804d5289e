"""Every periodic task, declared in one place."""

from __future__ import annotations

from typing import Any

from celery.schedules import crontab
from django.conf import settings


def beat_schedule() -> dict[str, dict[str, Any]]:
    """The beat schedule; intervals come from settings (environment)."""
    schedule: dict[str, dict[str, Any]] = {
        # Checks run per cluster and kind on the intervals in CheckSchedule (admin-editable);
        # this tick claims what is due.
        "health-tick": {"task": "apps.health.tasks.health_tick", "schedule": 10.0},
        # Every worker answers a broadcast ping (docs/operations.md, Watching the watcher);
        # one not sent in time is dropped, the next does the same.
        "ping-workers": {
            "task": "apps.common.tasks.ping_workers",
            "schedule": float(settings.KUAE_HEARTBEAT_S),
            "options": {"expires": float(settings.KUAE_HEARTBEAT_S)},
        },
        "prune-job-metrics": {
            "task": "apps.jobs.tasks.prune_metrics",
            "schedule": crontab(minute=17),
        },
        "prune-rollups": {
            "task": "apps.telemetry.tasks.prune_rollups",
            "schedule": crontab(minute=47),
        },
        # PostgreSQL: the next days' partitions of the step-sample and rollup tables.
        "ensure-partitions": {
            "task": "apps.common.tasks.ensure_partitions",
            "schedule": crontab(minute=7),
        },
        "prune-check-runs": {
            "task": "apps.health.tasks.prune_runs",
            "schedule": crontab(minute=27),
        },
        # Telemetry events, unrouted alerts and the stall stacks no rank points at.
        "prune-events": {
            "task": "apps.telemetry.tasks.prune_events",
            "schedule": crontab(minute=37),
        },
        "prune-unrouted-alerts": {
            "task": "apps.incidents.tasks.prune_unrouted",
            "schedule": crontab(minute=57),
        },
        "prune-rank-stacks": {
            "task": "apps.jobs.tasks.prune_stacks",
            "schedule": crontab(minute=3),
        },
        # Unacknowledged sev1/sev2 past KUAE_ESCALATE_SEV*_MIN: escalated once each.
        "escalate-incidents": {"task": "apps.incidents.tasks.escalate", "schedule": 30.0},
        "refresh-snapshots": {"task": "apps.reports.tasks.refresh_snapshots", "schedule": 60.0},
        # Each finished UTC day's node downtime, summed once for the reports' availability
        # (docs/formulas.md, GPU availability); back-filled days are summed again.
        "seal-availability-days": {
            "task": "apps.reports.tasks.seal_availability_days",
            "schedule": crontab(minute=13),
        },
        # Monday morning: last week's report to KUAE_REPORT_EMAILS (once per cluster and week).
        "weekly-report": {
            "task": "apps.reports.tasks.send_weekly_reports",
            "schedule": crontab(minute=0, hour=settings.KUAE_REPORT_HOUR, day_of_week=1),
        },
    }
    if settings.KUAE_SCRAPE_INTERVAL:
        schedule["scrape-exporters"] = {
            "task": "apps.telemetry.tasks.scrape_round",
            "schedule": float(settings.KUAE_SCRAPE_INTERVAL),
        }
    if settings.KUAE_SLURM_SYNC_S:
        schedule["slurm-sync"] = {
            "task": "apps.scheduler.tasks.sync_round",
            "schedule": float(settings.KUAE_SLURM_SYNC_S),
        }
    # The actuation outbox: drains and resumes reach Slurm within seconds, and those asked
    # for while it was unreachable when it is back.
    schedule["deliver-actuations"] = {
        "task": "apps.scheduler.tasks.deliver_actuations",
        "schedule": float(settings.KUAE_ACTUATION_TICK_S),
    }
    # Maintenance windows (docs/maintenance.md) begin and end within seconds of their times.
    schedule["maintenance-tick"] = {
        "task": "apps.maintenance.tasks.maintenance_tick",
        "schedule": float(settings.KUAE_MAINTENANCE_TICK_S),
    }
    # Repairs (docs/repairs.md): new drains open repairs within seconds (no page read opens
    # one; the pages show it as being opened until then); burn-ins are judged.
    schedule["repairs-sync"] = {
        "task": "apps.repairs.tasks.repairs_sync",
        "schedule": float(settings.KUAE_REPAIRS_SYNC_S),
        # A sync a busy or stopped worker did not start in time is dropped, not piled up:
        # the next one does the same work.
        "options": {"expires": float(settings.KUAE_REPAIRS_SYNC_S)},
    }
    schedule["repairs-tick"] = {
        "task": "apps.repairs.tasks.repairs_tick",
        "schedule": float(settings.KUAE_REPAIRS_TICK_S),
    }
    # Alerts out (docs/alertmanager.md, Alerts out): new, changed and ended alerts within a
    # tick, open ones re-posted every KUAE_ALERTMANAGER_REPEAT_S, failed posts retried.
    if settings.KUAE_ALERTMANAGER_URL:
        tick = float(min(10, settings.KUAE_ALERTMANAGER_REPEAT_S))
        schedule["alerts-out"] = {
            "task": "apps.incidents.tasks.alerts_out",
            "schedule": tick,
            "options": {"expires": tick},
        }
    if settings.DEMO:
        schedule["demo-tick"] = {"task": "apps.simulator.tasks.demo_tick", "schedule": 15.0}
    return schedule
