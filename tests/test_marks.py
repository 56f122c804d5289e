"""The suite's own module lists (tests/conftest.py): each names a module that exists, so a
renamed or deleted test module cannot leave `make test-quick` running a slow one, or the
embedded pass skipping one, without a word."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EMBEDDED, SLOW

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("listed", ["SLOW", "EMBEDDED"])
def test_every_listed_module_exists(listed: str) -> None:
    modules = SLOW if listed == "SLOW" else EMBEDDED
    missing = sorted(m for m in modules if not (ROOT / m).is_file())
    assert not missing, f"{listed} names modules that are not there: {missing}"


def test_slow_and_embedded_say_why() -> None:
    assert all(why.strip() for why in [*SLOW.values(), *EMBEDDED.values()])
