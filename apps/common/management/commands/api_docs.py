"""`manage.py api_docs [--output PATH | -] [--check]`: write docs/api.md from the OpenAPI
document the app serves at /api/v1/schema/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.common.apidocs import DOC_PATH, REGENERATE, api_markdown


class Command(BaseCommand):
    help = "Write the API reference (docs/api.md) from the app's own OpenAPI document."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--output", default=str(DOC_PATH), help="file to write, or - for stdout"
        )
        parser.add_argument(
            "--check", action="store_true", help="write nothing; fail if the file is out of date"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        text = api_markdown()
        if opts["output"] == "-":
            self.stdout.write(text, ending="")
            return
        path = Path(opts["output"])
        if opts["check"]:
            current = path.read_text(encoding="utf-8") if path.exists() else ""
            if current != text:
                raise CommandError(f"{path} is out of date: run `{REGENERATE}`")
            self.stdout.write(f"{path} is up to date")
            return
        path.write_text(text, encoding="utf-8")
        self.stdout.write(f"wrote {path}")
