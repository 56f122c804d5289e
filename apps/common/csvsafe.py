"""CSV a spreadsheet opens as text, never as formulas (CSV injection). Pure.

A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return (or their
full-width forms, which some spreadsheets read the same) is run as a formula by Excel,
LibreOffice and Sheets: `=HYPERLINK(…)` in an incident title, or `=cmd|' /C calc'!A0` in
a job name, would be live in the weekly report a manager opens from their mail. Such a
cell is written with a leading `'`, which spreadsheets show as text and do not display.

A spreadsheet that splits on another separator than the file's (`;` in much of Europe, a
tab) would read `ok;=1+1` as two cells, the second live: every cell is quoted
(`csv.QUOTE_ALL`, whatever the caller asks), and inside a cell a `'` goes before a formula
character that follows a field separator or a line break (`ok;'=1+1`), so the cell holds
even for a reader that ignores the quotes.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
# Inside a cell (not its first character, which FORMULA_STARTS covers): a field separator
# (`;`, `,`, tab) or a line break, followed by what starts a formula.
_INNER_FORMULA = re.compile(
    "(?<=.)([;,\t\r\n])(?=[" + re.escape("".join(FORMULA_STARTS)) + "])", re.DOTALL
)


def cell(value: object) -> object:
    """`value`, with a `'` before every place a spreadsheet would start a formula: the
    start of the text, and after a field separator or a line break inside it (numbers are
    left as they are)."""
    if not isinstance(value, str):
        return value
    value = _INNER_FORMULA.sub(r"\1'", value)
    if value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class SafeWriter:
    """`csv.writer` whose every cell goes through `cell` and is quoted."""

    def __init__(self, out: Any, **kwargs: Any) -> None:
        self._writer = csv.writer(out, **{**kwargs, "quoting": csv.QUOTE_ALL})

    def writerow(self, row: Iterable[object]) -> Any:
        """Write one row, neutralised."""
        return self._writer.writerow([cell(value) for value in row])

    def writerows(self, rows: Iterable[Iterable[object]]) -> None:
        """Write rows, each neutralised."""
        for row in rows:
            self.writerow(row)


def writer(out: Any, **kwargs: Any) -> SafeWriter:
    """A CSV writer on `out` (as `csv.writer`) that quotes every cell and neutralises
    formulas."""
    return SafeWriter(out, **kwargs)
