"""`manage.py screenshots`: the README's screenshots, made from the demo by a command, not by
hand (docs/simulator.md, Screenshots).

In a fresh directory of its own (never the `var/` of a running `make run`) it builds the demo
as `make run` does (`migrate`, `collectstatic`, `demo_setup`), starts its Procfile on a free
port (gunicorn, a Celery worker and beat, as `make run`), signs in as the demo's operator in
headless Chromium (Debian's /usr/bin/chromium, driven by Playwright), waits until the
overview shows a completed health sweep (not "beat has not ticked yet"), and writes each of
SHOTS. `--list` prints SHOTS; `--only NAME` makes one.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
CLUSTER = (
    "kuae-sim"  # the demo's big NVIDIA cluster (apps/simulator/management/commands/demo_setup.py)
)
SIGN_IN = ("demo", "demo")  # the demo's operator (apps/accounts/demo.py)
START_S = 60  # how long the web server may take to answer
SETTLE_S = 180  # how long beat and the worker may take to run the first checks
# What a page says before beat and the worker have run a sweep (apps/health/pipeline.py)
NOT_YET = ("has not ticked yet", "no health check has completed yet", "may be out of date")


@dataclass(frozen=True)
class Shot:
    """One screenshot: the page, the window it is taken in, the PNG it writes."""

    name: str
    path: str  # the page's URL path and query
    width: int
    height: int
    out: str  # relative to the repository
    full_page: bool = False


SHOTS: tuple[Shot, ...] = (
    Shot("overview", f"/?cluster={CLUSTER}", 1440, 1000, "docs/overview.png"),
    Shot("overview-phone", f"/?cluster={CLUSTER}", 390, 844, "docs/overview-phone.png"),
)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def demo_env(var_dir: Path, port: int) -> dict[str, str]:
    """The environment `make run` gives the demo, in `var_dir`, on `port`."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(KUAE_DEMO="1", DJANGO_HTTPS="0", KUAE_VAR_DIR=str(var_dir), PORT=str(port))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("DJANGO_SETTINGS_MODULE", None)  # the demo's settings, never the tests'
    return env


class Command(BaseCommand):
    help = "Make the README's screenshots (docs/overview.png …) from a fresh demo in Chromium."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--list", action="store_true", help="print the screenshots and stop")
        parser.add_argument("--only", default="", help="make this one screenshot (its name)")
        parser.add_argument("--days", type=float, default=14, help="the demo's days of history")

    def handle(self, *args: Any, **opts: Any) -> None:
        shots = [s for s in SHOTS if not opts["only"] or s.name == opts["only"]]
        if not shots:
            raise CommandError(f"no screenshot named {opts['only']!r}")
        if opts["list"]:
            for s in shots:
                self.stdout.write(f"{s.name}: {s.path} at {s.width}×{s.height} → {s.out}")
            return
        if not CHROMIUM.exists():
            raise CommandError(f"no {CHROMIUM} (apt-get install chromium chromium-driver)")
        root = Path(settings.BASE_DIR)
        with tempfile.TemporaryDirectory(prefix="kuae-shots-") as tmp:
            port = free_port()
            env = demo_env(Path(tmp), port)
            manage = [sys.executable, str(root / "manage.py")]
            started = time.perf_counter()
            for step in (
                ["migrate", "--noinput", "-v0"],
                ["collectstatic", "--noinput", "-v0"],
                ["demo_setup", "--days", str(opts["days"])],
            ):
                subprocess.run([*manage, *step], env=env, cwd=root, check=True, capture_output=True)
            self.stderr.write(f"demo built in {time.perf_counter() - started:.1f} s")
            honcho = Path(sys.executable).with_name("honcho")
            server = subprocess.Popen(
                [str(honcho), "start", "-f", str(root / "Procfile")],
                env=env,
                cwd=root,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # its gunicorn, worker and beat: one group to stop
            )
            try:
                base = f"http://127.0.0.1:{port}"
                _wait(f"{base}/login/")
                for out in self._shoot(base, shots, root):
                    self.stdout.write(f"wrote {out}")
            finally:
                os.killpg(server.pid, signal.SIGTERM)
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)
                    server.wait()

    def _shoot(self, base: str, shots: list[Shot], root: Path) -> list[Path]:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs a loop
        from playwright.sync_api import sync_playwright

        written = []
        settled = False
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                for shot in shots:
                    page = browser.new_page(
                        viewport={"width": shot.width, "height": shot.height},
                        color_scheme="light",
                    )
                    page.goto(f"{base}/login/")
                    page.fill("#id_username", SIGN_IN[0])
                    page.fill("#id_password", SIGN_IN[1])
                    page.click("button[type=submit]")
                    page.wait_for_load_state("networkidle")
                    page.goto(f"{base}{shot.path}")
                    page.wait_for_load_state("networkidle")
                    deadline = time.monotonic() + SETTLE_S
                    while not settled and time.monotonic() < deadline:
                        text = page.inner_text("body").lower()  # what a person sees
                        if not any(words in text for words in NOT_YET):
                            settled = True
                            break
                        page.wait_for_timeout(5000)
                        page.reload()
                        page.wait_for_load_state("networkidle")
                    if not settled:
                        self.stderr.write("the demo's checks have not run: shot as it is")
                        settled = True
                    page.goto(f"{base}{shot.path}")  # afresh: at its top, nothing scrolled
                    page.wait_for_load_state("networkidle")
                    page.wait_for_timeout(1500)  # the polled health line fills in
                    page.evaluate("window.scrollTo(0, 0)")
                    out = root / shot.out
                    page.screenshot(path=str(out), full_page=shot.full_page)
                    written.append(out)
                    page.close()
            finally:
                browser.close()
        return written


def _wait(url: str) -> None:
    """Until `url` answers (gunicorn is up), at most START_S seconds."""
    deadline = time.monotonic() + START_S
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):  # noqa: S310 (our own server)
                return
        except OSError as exc:
            if time.monotonic() > deadline:
                raise CommandError(f"the demo server did not answer {url} in {START_S} s") from exc
            time.sleep(0.5)
