"""What the checkout must not carry: the embedded broker's files
(docs/operations.md, Configuration) live under `var/`, and an exchange file that kombu's
filesystem transport writes (`control/q.exchange`, `celery.exchange`) is ignored wherever it
lands, never committed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30
    )


@pytest.fixture(autouse=True)
def _a_git_checkout() -> None:
    if shutil.which("git") is None or _git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout (an unpacked release): nothing is committed here")


@pytest.mark.parametrize(
    "path", ["control/q.exchange", "control/celery.exchange", "agent/control/q.exchange"]
)
def test_a_broker_exchange_file_is_ignored(path: str) -> None:
    assert _git("check-ignore", "--no-index", "-q", path).returncode == 0


def test_no_broker_file_is_committed() -> None:
    tracked = _git("ls-files").stdout.splitlines()
    assert [p for p in tracked if p.endswith(".exchange") or p.startswith("control/")] == []
    assert [p for p in tracked if p.startswith("var/")] == []
