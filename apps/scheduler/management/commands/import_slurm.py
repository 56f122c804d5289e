"""`manage.py import_slurm FILE [--cluster NAME]`: load `sacct --json` output."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.common.errors import BatchError
from apps.scheduler.services import slurm_ingest


class Command(BaseCommand):
    help = "Create or update jobs from `sacct --json` output (FILE, or - for stdin)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--cluster", help="cluster name; wins over each record's")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            text = sys.stdin.read() if opts["file"] == "-" else Path(opts["file"]).read_text()
            payload = json.loads(text)
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read {opts['file']}: {exc}") from exc
        try:
            counts = slurm_ingest(cluster_name=opts["cluster"], payload=payload)
        except BatchError as exc:
            raise CommandError(json.dumps(exc.errors)) from exc
        self.stdout.write(
            f"{counts['created']} jobs created, {counts['updated']} updated, "
            f"{counts['incidents']} incidents opened"
        )
