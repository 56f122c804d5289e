"""No merge conflict's markers are left in the project's text: a page or a doc that shows
`<<<<<<< HEAD` to its reader is a broken merge (one sat in docs/formulas.md for a stop)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^(<{7} |={7}$|>{7} )", re.MULTILINE)
TEXT = (".py", ".html", ".md", ".js", ".css", ".po", ".toml", ".txt", ".sh", ".json", ".yml")


def test_no_file_holds_a_merge_conflicts_markers() -> None:
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    marked = [
        name
        for name in files
        if name.endswith(TEXT)
        and (ROOT / name).is_file()
        and MARKER.search((ROOT / name).read_text(errors="replace"))
    ]
    assert not marked, f"merge conflict markers left in {marked}"
