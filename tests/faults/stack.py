"""The fault tests' own servers and KUAE's processes: a throwaway PostgreSQL and Redis on
free ports, and gunicorn, a Celery worker and beat against them (tests/faults)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PG_BIN = Path("/usr/lib/postgresql/15/bin")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(check: Callable[[], object], timeout: float, what: str) -> None:
    """Poll `check` until it is truthy (errors count as not yet); TimeoutError(`what`)
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.2)
    raise TimeoutError(what)


class Postgres:
    """A throwaway PostgreSQL cluster owned by the `postgres` user, on a free port."""

    def __init__(self, base: Path) -> None:
        self.dir, self.port = base / "pg", free_port()
        self.dir.mkdir()
        shutil.chown(self.dir, "postgres", "postgres")
        self._as_postgres(
            [str(PG_BIN / "initdb"), "-D", str(self.dir / "data"), "-A", "trust", "-U", "postgres"]
        )
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/kuae"

    def _as_postgres(self, cmd: list[str]) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *cmd], check=True, capture_output=True)

    def _ctl(self, action: str, *extra: str) -> None:
        opts = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir}"
        self._as_postgres(
            [
                str(PG_BIN / "pg_ctl"),
                "-D",
                str(self.dir / "data"),
                "-l",
                str(self.dir / "log"),
                "-o",
                opts,
                "-w",
                *extra,
                action,
            ]
        )

    def start(self) -> None:
        self._ctl("start")

    def stop(self, mode: str = "immediate") -> None:
        self._ctl("stop", "-m", mode)


class Redis:
    """A redis-server on a free port with an append-only file, so queued tasks survive."""

    def __init__(self, base: Path) -> None:
        self.dir, self.port = base / "redis", free_port()
        self.dir.mkdir()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--dir",
                str(self.dir),
            ],
            stdout=subprocess.DEVNULL,
        )
        wait(
            lambda: socket.create_connection(("127.0.0.1", self.port), 0.2).close() or True,
            10,
            "redis",
        )

    def stop(self) -> None:
        if self.proc:
            self.proc.terminate()
            self.proc.wait(10)


class App:
    """gunicorn (2 workers), a Celery worker and beat, all against the test's servers."""

    def __init__(self, base: Path, pg: Postgres, redis: Redis) -> None:
        self.base, self.port = base, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DATABASE_URL": pg.url,
            "CELERY_BROKER_URL": redis.url,
            "DJANGO_SETTINGS_MODULE": "kuaeweb.settings",
            "KUAE_TESTING": "1",
            "DJANGO_HTTPS": "0",
            "KUAE_VAR_DIR": str(base / "var"),
            "KUAE_SCRAPE_INTERVAL": "0",
            "KUAE_QUEUE": "faults",
            "PYTHONUNBUFFERED": "1",
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        }
        self.procs: dict[str, subprocess.Popen] = {}

    def run(self, *args: str) -> str:
        out = subprocess.run(
            [sys.executable, *args],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout

    def start(self, name: str) -> None:
        cmd = {
            "web": [
                "gunicorn",
                "kuaeweb.wsgi",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "2",
                "--threads",
                "4",
                "--access-logfile",
                "-",
                "--access-logformat",
                "%(m)s %(U)s %(s)s",
            ],
            "worker": [
                "celery",
                "-A",
                "kuaeweb",
                "worker",
                "--concurrency=2",
                "--without-gossip",
                "--without-mingle",
                "-Q",
                "faults",
            ],
            "beat": ["celery", "-A", "kuaeweb", "beat", "-s", str(self.base / "var" / "beat")],
        }[name]
        log = open(self.base / f"{name}.log", "ab")  # noqa: SIM115 - lives as long as the process
        self.procs[name] = subprocess.Popen(
            cmd, cwd=ROOT, env=self.env, stdout=log, stderr=log, start_new_session=True
        )

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.pop(name)
        os.killpg(proc.pid, sig)  # the worker's pool children too
        proc.wait(20)

    def send(self, name: str, sig: int) -> None:
        """Send `sig` to the process group of `name` (SIGSTOP, SIGCONT), keeping it."""
        os.killpg(self.procs[name].pid, sig)

    def stop_all(self) -> None:
        """SIGTERM every process group, continued in case it was stopped; SIGKILL what
        has not ended in 20 s."""
        for name in list(self.procs):
            proc = self.procs.pop(name)
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                os.killpg(proc.pid, signal.SIGCONT)
                proc.wait(20)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(20)


def show_logs(app: App) -> None:
    """What gunicorn, the worker and beat said: the only clue to a timeout."""
    for name in ("web", "worker", "beat"):
        log = app.base / f"{name}.log"
        tail = log.read_text(errors="replace")[-6000:] if log.exists() else "(none)"
        print(f"\n--- {name}.log (end) ---\n{tail}")
