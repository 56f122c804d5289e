"""docs/checks.md's thresholds table is generated from `apps.health.limits` and current."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

import apps.health.thresholds_doc as doc
from apps.health.limits import FIELDS
from apps.health.thresholds_doc import (
    BEGIN,
    DOC_PATH,
    END,
    REGENERATE,
    thresholds_table,
    with_table,
)


def test_docs_checks_md_thresholds_table_is_current() -> None:
    text = DOC_PATH.read_text(encoding="utf-8")
    assert with_table(text) == text, (
        f"docs/checks.md's thresholds table is stale: run `{REGENERATE}`"
    )


def test_every_threshold_has_a_row_with_its_default_and_unit() -> None:
    rows = thresholds_table().splitlines()[2:]
    assert len(rows) == len(FIELDS)
    by_name = {row.split("|")[2].strip().strip("`"): row for row in rows}
    assert by_name["heartbeat_s"] == (
        "| every check | `heartbeat_s` | Silent node after | 180 | s | ≥ 1 and ≤ 86,400 |"
    )
    assert "| 0.02 (2%) | share | > 0 and ≤ 1 |" in by_name["drain_cap_share"]
    assert by_name["temp_c"].startswith("| `thermal` | `temp_c` |")
    assert "| 90 | °C | ≥ 1 and ≤ 150 |" in by_name["temp_c"]
    assert "| 1,800 | s | ≥ 60 and ≤ 604,800 |" in by_name["quiet_resolve_s"]
    assert by_name["fabric_flaps_per_min"].startswith("| `fabric` |")


def test_a_new_threshold_makes_the_document_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    text = DOC_PATH.read_text(encoding="utf-8")
    extra = dataclasses.field(
        default=7,
        metadata={
            "label": "New",
            "unit": "s",
            "check": "thermal",
            "lo": 1,
            "hi": 60,
            "above_lo": False,
        },
    )
    extra.name = "new_threshold"
    monkeypatch.setattr(doc, "FIELDS", (*FIELDS, extra))
    monkeypatch.setitem(doc.DEFAULTS, "new_threshold", 7)
    assert with_table(text) != text
    assert "| `thermal` | `new_threshold` | New | 7 | s | ≥ 1 and ≤ 60 |" in with_table(text)


def test_the_command_rewrites_only_the_block_and_checks(tmp_path: Path) -> None:
    target = tmp_path / "checks.md"
    target.write_text(f"# Before\n\n{BEGIN}\nold table\n{END}\n\nAfter.\n", encoding="utf-8")
    with pytest.raises(CommandError, match="out of date"):
        call_command("docs_thresholds", "--file", str(target), "--check")
    call_command("docs_thresholds", "--file", str(target))
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# Before\n\n") and text.endswith(f"{END}\n\nAfter.\n")
    assert "old table" not in text
    call_command("docs_thresholds", "--file", str(target), "--check")


def test_missing_markers_are_an_error(tmp_path: Path) -> None:
    target = tmp_path / "checks.md"
    target.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(CommandError, match="markers are missing"):
        call_command("docs_thresholds", "--file", str(target))
