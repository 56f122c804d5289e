"""What every browser journey does: watch the page for errors and outside requests, sign in."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass
class Watch:
    """Console errors, page errors and requests to any host but the app's, as they happen."""

    host: str
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)

    def attach(self, page) -> None:  # noqa: ANN001 - a Playwright page
        """Listen on this page."""
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on(
            "request",
            lambda r: self.outside.append(r.url) if urlsplit(r.url).netloc != self.host else None,
        )

    def assert_clean(self) -> None:
        """No console error, no request left the app."""
        assert not self.errors, self.errors
        assert not self.outside, f"requests left the app: {self.outside}"


def watch(page, base_url: str) -> Watch:  # noqa: ANN001
    """Start watching `page` for a test against the app at `base_url`."""
    w = Watch(urlsplit(base_url).netloc)
    w.attach(page)
    return w


def sign_in(page, base_url: str, username: str, password: str) -> None:  # noqa: ANN001
    """Sign in through the login form and wait for the navigation."""
    page.goto(base_url + "/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click(".login button[type=submit]")  # not the header's language switch
    page.wait_for_selector("nav >> text=Overview")
