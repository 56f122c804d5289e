"""Watching the watcher with real processes (issue 26; docs/operations.md, Watching the
watcher): gunicorn, a Celery worker and beat on the test's own PostgreSQL and Redis. The
worker is frozen (SIGSTOP of its process group) and continued, beat is killed and
restarted; an operator signed in sees the red banner on the overview, a reader sees the
part stale in `GET /api/v1/pipeline/`, within two check intervals, and both clear again.

Workers are pinged every 2 s (KUAE_HEARTBEAT_S); the heartbeat check runs every 8 s (the
10-s health tick claims it each time). Prints the measured delays.
"""

from __future__ import annotations

import html
import json
import re
import signal
import time
from collections.abc import Callable

import httpx
import pytest

from apps.health.pipeline import BEAT_INTERVAL_S, CACHE_S
from tests.faults.stack import App, show_logs, wait

pytestmark = pytest.mark.faults  # every wait has its own deadline (no pytest-timeout here)
HEARTBEAT_S = 2
CHECK_S = 8
PASSWORD = "Watch-the-watcher-26"
BANNER = re.compile(r'data-pipeline="stale"><b>(.*?)</b>', re.S)


class Operator:
    """A signed-in operator's browser session and a reader's API token."""

    def __init__(self, url: str, reader_token: str) -> None:
        self.web = httpx.Client(base_url=url, timeout=10)
        self.api = httpx.Client(
            base_url=url, timeout=10, headers={"Authorization": f"Token {reader_token}"}
        )

    def _csrf(self) -> dict[str, str]:
        return {"csrfmiddlewaretoken": self.web.cookies["csrftoken"]}

    def sign_in(self) -> None:
        form = self.web.get("/login/")
        assert "csrftoken" in self.web.cookies, (form.status_code, dict(form.headers))
        answer = self.web.post(
            "/login/", data={"username": "fault-operator", "password": PASSWORD, **self._csrf()}
        )
        assert answer.status_code == 302, answer.text[:500]

    def pipeline(self) -> dict:
        answer = self.api.get("/api/v1/pipeline/")
        assert answer.status_code == 200, answer.text[:500]
        return answer.json()

    def banner(self, path: str = "/") -> str | None:
        """The red banner's words on a page, or None when it has none."""
        answer = self.web.get(path)
        assert answer.status_code == 200, f"{path}: {answer.status_code}"
        found = BANNER.search(answer.text)
        return html.unescape(found.group(1)) if found else None

    def run_checks_now(self) -> str:
        """POST the Health page's "Run all checks now"; the message it shows next."""
        answer = self.web.post("/health/run/", data={"cluster": "f1", **self._csrf()})
        assert answer.status_code == 302, answer.text[:500]
        page = self.web.get(answer.headers["location"]).text
        shown = re.findall(r'<p class="flash [^"]*" role="status">(.*?)</p>', page, re.S)
        return html.unescape(" ".join(shown)) or page


def _worker_stale(status: dict) -> bool:
    return any(p["name"].startswith("worker:") and not p["ok"] for p in status["parts"])


def _until(check: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll `check` every 0.25 s; the seconds it took, or TimeoutError(`what`)."""
    start = time.monotonic()
    deadline = start + timeout
    while time.monotonic() < deadline:
        if check():
            return time.monotonic() - start
        time.sleep(0.25)
    raise TimeoutError(what)


def test_frozen_worker_and_dead_beat_are_shown(stack):
    _pg, _redis, app = stack
    app.env.update(KUAE_HEARTBEAT_S=str(HEARTBEAT_S))
    world = json.loads(
        app.run(
            "-m", "tests.faults.world", "--check-interval", str(CHECK_S), "--operator", PASSWORD
        )
        .strip()
        .splitlines()[-1]
    )
    app.run("manage.py", "collectstatic", "--noinput", "-v0")  # pages need the manifest
    for name in ("web", "worker", "beat"):
        app.start(name)
    try:
        _watch(app, Operator(app.url, world["reader_token"]))
    except (TimeoutError, AssertionError):
        show_logs(app)
        raise


def _watch(app: App, op: Operator) -> None:
    wait(lambda: httpx.get(app.url + "/healthz", timeout=1).status_code == 200, 30, "gunicorn")
    op.sign_in()
    # 1. Everything fresh, no banner (the first check run and ping take a tick or two).
    _until(lambda: op.pipeline()["ok"] and op.banner() is None, 90, "all parts ok at first")
    time.sleep(2 * HEARTBEAT_S)
    status = op.pipeline()
    assert status["ok"], status
    assert {"beat", "check:heartbeat"} <= {p["name"] for p in status["parts"]}
    assert any(p["name"].startswith("worker:") for p in status["parts"])

    # 2. The worker frozen: stale in the API, the banner on the page, run-now honest.
    app.send("worker", signal.SIGSTOP)
    frozen_at = time.monotonic()
    api_s = _until(lambda: _worker_stale(op.pipeline()), 4 * CHECK_S, "worker stale in API")
    _until(
        lambda: "the worker may be stopped or stalled" in (op.banner() or ""),
        4 * CHECK_S,
        "the banner saying the worker may be stopped or stalled",
    )
    page_s = time.monotonic() - frozen_at  # from the freeze, not from the API's verdict
    words = op.banner()
    assert words and "What you see may be out of date" in words, words
    assert page_s <= 2 * CHECK_S, f"banner after {page_s:.1f} s, over two check intervals"
    time.sleep(CACHE_S)  # every web process's cached status has been refreshed by now
    said = op.run_checks_now()
    assert "No worker is taking runs" in said and "Queued" not in said, said
    assert "the worker may be stopped or stalled" in (op.banner("/health/?cluster=f1") or "")

    # 3. The worker continued: fresh again, the banner gone.
    app.send("worker", signal.SIGCONT)
    cleared_s = _until(
        lambda: op.pipeline()["ok"] and op.banner() is None, 60, "the banner gone after SIGCONT"
    )
    assert cleared_s <= 2 * CHECK_S + CACHE_S, f"cleared after {cleared_s:.1f} s"

    # 4. Beat killed: the banner names beat, not the (running) worker; restarted: gone.
    time.sleep(2)
    app.kill("beat", signal.SIGTERM)
    beat_s = _until(lambda: "has not ticked" in (op.banner() or ""), 60, "beat in the banner")
    beat_words = op.banner() or ""
    assert "beat" in beat_words.lower(), beat_words
    assert "the worker may be stopped or stalled" not in beat_words, beat_words
    assert not next(p for p in op.pipeline()["parts"] if p["name"] == "beat")["ok"]
    assert beat_s <= 2 * BEAT_INTERVAL_S + CACHE_S + 2, f"beat stale after {beat_s:.1f} s"
    app.start("beat")
    beat_cleared_s = _until(
        lambda: op.pipeline()["ok"] and op.banner() is None, 90, "the banner gone, beat back"
    )
    print(
        f"\nwatcher: worker frozen -> stale in API {api_s:.1f} s, banner {page_s:.1f} s "
        f"(limit {2 * CHECK_S} s); continued -> cleared {cleared_s:.1f} s; beat killed -> "
        f"banner {beat_s:.1f} s; restarted -> cleared {beat_cleared_s:.1f} s\n"
        f"banner (worker): {words}\nbanner (beat): {beat_words}\nrun now: {said}"
    )
