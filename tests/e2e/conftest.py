"""Real headless Chromium (Debian's) driven by Playwright against the live test server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# The flags this machine needs: no sandbox as root, and no background traffic to the
# closed network.
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    """A Chromium browser; skipped where none is installed, except in CI, where it fails."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("CI needs Debian's chromium (.ci/run installs it)")
        pytest.skip("no /usr/bin/chromium (apt-get install chromium chromium-driver)")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs a loop
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()
