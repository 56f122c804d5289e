"""The tests `make test` runs again on the embedded default (tests/conftest.py, EMBEDDED)
are files that exist: a module moved or renamed must not drop out of that run unnoticed."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import EMBEDDED

ROOT = Path(__file__).resolve().parents[2]


def test_every_embedded_module_exists_and_says_why() -> None:
    missing = [path for path in EMBEDDED if not (ROOT / path).is_file()]
    assert not missing, f"EMBEDDED names files that are not there: {missing}"
    assert all(reason.strip() for reason in EMBEDDED.values())
