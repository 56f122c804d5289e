"""The translations are whole (docs/pages.md, Language): every message in the catalogue has
its Chinese, the catalogue holds every string the code and templates mark, and no template
shows English outside a translation tag."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.i18n_check import TEMPLATES, template_english

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"

_ENTRY = re.compile(r'^(msgid|msgid_plural|msgstr(?:\[\d+\])?) "(.*)"$')


def read_po(path: Path) -> list[dict[str, str]]:
    """The entries of a .po file: each a dict of msgid / msgid_plural / msgstr… and `flags`."""
    entries: list[dict[str, str]] = []
    entry: dict[str, str] = {}
    key = ""
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if not line.strip():
            if entry:
                entries.append(entry)
            entry, key = {}, ""
        elif line.startswith("#,"):
            entry["flags"] = entry.get("flags", "") + line[2:]
        elif line.startswith("#"):
            continue
        elif line.startswith('"') and key:
            entry[key] += line[1:-1]
        elif m := _ENTRY.match(line):
            key = m.group(1)
            entry[key] = m.group(2)
    return [e for e in entries if e.get("msgid")]


def test_every_message_has_its_chinese() -> None:
    entries = read_po(CATALOGUE)
    assert entries
    fuzzy = [e["msgid"] for e in entries if "fuzzy" in e.get("flags", "")]
    empty = [
        e["msgid"] for e in entries if not all(v for k, v in e.items() if k.startswith("msgstr"))
    ]
    assert not fuzzy, f"fuzzy (unchecked) translations: {fuzzy[:10]}"
    assert not empty, f"{len(empty)} message(s) without Chinese: {empty[:10]}"


def test_catalogue_holds_every_marked_string(tmp_path: Path) -> None:
    """makemessages over a copy of the code finds no string the committed catalogue lacks."""
    for part in ("apps", "kuaeweb", "templates", "locale"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "manage.py", tmp_path / "manage.py")
    subprocess.run(
        [sys.executable, "manage.py", "makemessages", "-l", "zh_Hans", "--no-location"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=120,
    )
    fresh = {e["msgid"] for e in read_po(tmp_path / CATALOGUE.relative_to(ROOT))}
    committed = {e["msgid"] for e in read_po(CATALOGUE)}
    missing = sorted(fresh - committed)
    assert not missing, (
        f"{len(missing)} marked string(s) not in the catalogue (run makemessages): {missing[:10]}"
    )


@pytest.mark.parametrize(
    "name", sorted(str(p.relative_to(TEMPLATES)) for p in TEMPLATES.rglob("*.html"))
)
def test_templates_show_no_english_outside_translation_tags(name: str) -> None:
    words = template_english((TEMPLATES / name).read_text(encoding="utf-8"))
    assert not words, f"{name} shows English outside a translation tag: {words[:12]}"
