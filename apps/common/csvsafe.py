"""CSV a spreadsheet opens as text, never as formulas (CSV injection). Pure.

A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return (or their
full-width forms, which some spreadsheets read the same) is run as a formula by Excel,
LibreOffice and Sheets: `=HYPERLINK(…)` in an incident title, or `=cmd|' /C calc'!A0` in
a job name, would be live in the weekly report a manager opens from their mail. Such a
cell is written with a leading `'`, which spreadsheets show as text and do not display.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def cell(value: object) -> object:
    """`value`, with a leading `'` when it is text a spreadsheet would run as a formula
    (numbers are left as they are)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class SafeWriter:
    """`csv.writer` whose every cell goes through `cell`."""

    def __init__(self, out: Any, **kwargs: Any) -> None:
        self._writer = csv.writer(out, **kwargs)

    def writerow(self, row: Iterable[object]) -> Any:
        """Write one row, neutralised."""
        return self._writer.writerow([cell(value) for value in row])

    def writerows(self, rows: Iterable[Iterable[object]]) -> None:
        """Write rows, each neutralised."""
        for row in rows:
            self.writerow(row)


def writer(out: Any, **kwargs: Any) -> SafeWriter:
    """A CSV writer on `out` (as `csv.writer`) that neutralises formula cells."""
    return SafeWriter(out, **kwargs)
