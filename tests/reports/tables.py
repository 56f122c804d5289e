"""Reading the weekly report's tidy CSV files in tests: `weekly.csv` and `weekly.zip`."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import PurePosixPath


def rows(text: str) -> list[dict[str, str]]:
    """A CSV file's rows, each by column name."""
    return list(csv.DictReader(io.StringIO(text)))


def tables(content: bytes) -> dict[str, list[dict[str, str]]]:
    """`weekly.zip`'s files by name (`jobs`, `incidents`, …), each as its rows."""
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return {
            PurePosixPath(name).stem: rows(archive.read(name).decode("utf-8"))
            for name in archive.namelist()
        }


def cells(content: bytes) -> list[str]:
    """Every cell of every file of `weekly.zip`, headers included."""
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return [
            cell
            for name in archive.namelist()
            for row in csv.reader(io.StringIO(archive.read(name).decode("utf-8")))
            for cell in row
        ]
