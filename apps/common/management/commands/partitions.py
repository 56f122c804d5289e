"""`manage.py partitions [--ensure] [--days-ahead N]`: the day partitions of every
partitioned table (PostgreSQL), with their ranges, rows (estimated) and size on disk."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import connection

from apps.common.partitions import (
    Partition,
    partitioned_tables,
    partitions_ensure,
    partitions_list,
)
from apps.common.tasks import DAYS_AHEAD


def _size(n: int) -> str:
    """Bytes in the largest unit that keeps the figure at least 1."""
    value = float(n)
    for unit in ("B", "kB", "MB"):
        if value < 1024:
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} GB"


def _range(part: Partition) -> str:
    if part.default:
        return "DEFAULT (any time no day covers)"
    start = "…" if part.start is None else f"{part.start:%Y-%m-%d %H:%M}"
    end = "…" if part.end is None else f"{part.end:%Y-%m-%d %H:%M}"
    return f"{start} → {end} UTC"


class Command(BaseCommand):
    help = "List the partitions of the partitioned tables (PostgreSQL); --ensure makes them first."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--ensure",
            action="store_true",
            help="first make the coming days' partitions and move rows out of DEFAULT",
        )
        parser.add_argument("--days-ahead", type=int, default=DAYS_AHEAD, metavar="N")

    def handle(self, *args: Any, **opts: Any) -> None:
        tables = partitioned_tables()
        if not tables:
            self.stdout.write(
                f"No partitioned tables on {connection.vendor}: retention deletes old rows "
                "in batches."
            )
            return
        for table, column in tables:
            if opts["ensure"]:
                for name in partitions_ensure(table, column, opts["days_ahead"]):
                    self.stdout.write(f"made {name}")
            parts = partitions_list(table)
            rows = sum(p.rows for p in parts)
            size = sum(p.bytes for p in parts)
            self.stdout.write(
                f"{table}, by day of {column}: {len(parts)} partitions, "
                f"~{rows:,} rows, {_size(size)}"
            )
            for part in parts:
                estimate = f"~{part.rows:,}"
                self.stdout.write(
                    f"  {part.name:<32} {_range(part):<40} {estimate:>13} rows "
                    f"{_size(part.bytes):>10}"
                )
