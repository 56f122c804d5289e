"""`manage.py run_checks --cluster NAME [--check KIND ...]`: run checks now, print problems."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.fleet.models import Cluster
from apps.health.checks import SCHEDULED_KINDS
from apps.health.models import CheckResult
from apps.health.services import runs_execute_now


class Command(BaseCommand):
    help = "Run health checks synchronously; one line per warning or failing result."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", required=True)
        parser.add_argument(
            "--check", action="append", choices=list(SCHEDULED_KINDS), dest="checks"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        cluster = Cluster.objects.filter(name=opts["cluster"]).first()
        if cluster is None:
            raise CommandError(f"no cluster {opts['cluster']!r}")
        runs = runs_execute_now(
            cluster=cluster,
            kinds=opts["checks"] or list(SCHEDULED_KINDS),
            requested_by="run_checks",
        )
        for run in runs:
            if run.status == "error":
                self.stderr.write(f"{run.kind}: error: {run.error}")
                continue
            for r in CheckResult.objects.filter(run=run).exclude(status="pass").order_by("target"):
                self.stdout.write(f"{r.status.upper()} {r.kind} {r.target}: {r.message}")
            took = f"{run.duration_s * 1000:.0f} ms" if run.duration_s is not None else "—"
            self.stderr.write(f"{run.kind}: {run.counts} in {took}")
