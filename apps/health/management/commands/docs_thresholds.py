"""`manage.py docs_thresholds [--check]`: rewrite the thresholds table in docs/checks.md from
`apps.health.limits`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.health.thresholds_doc import DOC_PATH, REGENERATE, with_table


class Command(BaseCommand):
    help = "Rewrite the thresholds table of docs/checks.md from the thresholds' one definition."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--file", default=str(DOC_PATH), help="the document to update")
        parser.add_argument(
            "--check", action="store_true", help="write nothing; fail if the table is out of date"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        path = Path(opts["file"])
        current = path.read_text(encoding="utf-8")
        try:
            fresh = with_table(current)
        except ValueError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        if opts["check"]:
            if fresh != current:
                raise CommandError(f"{path}'s thresholds table is out of date: run `{REGENERATE}`")
            self.stdout.write(f"{path} is up to date")
        elif fresh != current:
            path.write_text(fresh, encoding="utf-8")
            self.stdout.write(f"updated the thresholds table in {path}")
        else:
            self.stdout.write(f"{path} is up to date")
