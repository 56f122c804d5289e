"""Real Debian servers for tests, started on free loopback ports and stopped afterwards:
`prometheus` (or `victoria-metrics`) scraping targets every second, node_exporter's
collectors (`infiniband`, or `edac`, `filesystem`, `timex`) on fake sysfs, procfs and root
trees, and a counting proxy that shows what KUAE asks a server. A binary (or Python module)
that is absent skips its test with a reason, except under CI (`.ci/run` installs them),
where it fails: every program a fixture starts is in its check (`absent`)."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import httpx
import pytest

from tests.support import LoopbackServer, QuietHandler, closed_port, reply

DEADLINE_S = 30.0


def absent(reason: str, *, ci: str = ".ci/run installs it") -> NoReturn:
    """A part the test needs is not here: skip saying `reason`, or fail under CI, which
    installs every part (`ci` says how), so a part missing there is a fault, not a skip."""
    if os.environ.get("CI"):
        pytest.fail(f"CI needs what is missing: {reason} ({ci})")
    pytest.skip(reason, allow_module_level=True)


def binaries_or_skip(binaries: Mapping[str, str], *, what: str) -> None:
    """Skip (fail under CI) unless every program of `binaries` (name → the Debian package
    that holds it) is on PATH, where the test's processes look for it; the reason names
    each one missing and the packages that hold them."""
    missing = [name for name in binaries if shutil.which(name) is None]
    if missing:
        packages = " ".join(sorted({binaries[name] for name in missing}))
        absent(f"no {what} here ({', '.join(missing)}): apt-get install {packages}")


def module_or_skip(name: str, *, install: str) -> ModuleType:
    """The module `name`, imported; absent, the test skips saying how to `install` it, or
    fails under CI (pytest.importorskip would skip there too)."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        absent(f"no {name} here ({error}): {install}", ci="the dev lock installs it")


def find_binary(*names: str) -> str | None:
    """The first of `names` on PATH or in /usr/bin, else None."""
    for name in names:
        found = shutil.which(name) or (
            f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None
        )
        if found:
            return found
    return None


def debian_binary(*names: str, package: str) -> str:
    """The first of `names` found; absent, the test skips saying which package to install,
    or fails under CI."""
    found = find_binary(*names)
    if found is None:
        absent(f"no {package} here (apt-get install {package})")
    return found


def until(check: Callable[[], Any], what: str, logs: Sequence[Path] = ()) -> Any:
    """Poll `check` until it returns something truthy, at most DEADLINE_S; the logs' tails
    in the failure otherwise."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    tails = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in logs if p.exists())
    pytest.fail(f"timed out waiting for {what}\n{tails}")


def stop(process: subprocess.Popen) -> None:
    """Terminate `process` (a process the test started), killing it if it lingers."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def write_port(sysfs: Path, device: str, port: int, **files: object) -> Path:
    """`<sysfs>/class/infiniband/<device>/ports/<port>/`: `state`, `phys_state`, `rate` and
    `counters/<name>` as the kernel writes them."""
    base = sysfs / "class" / "infiniband" / device
    where = base / "ports" / str(port)
    (where / "counters").mkdir(parents=True, exist_ok=True)
    (base / "fw_ver").write_text("28.39.1002\n")
    (base / "board_id").write_text("MT_0000000838\n")
    (base / "hca_type").write_text("MT4129\n")
    for name, value in files.items():
        path = (
            where / name if name in ("state", "phys_state", "rate") else where / "counters" / name
        )
        path.write_text(f"{value}\n")
    return where


class NodeExporter:
    """The real node_exporter (Debian's prometheus-node-exporter) on fake trees: only the
    `collectors` named (its infiniband collector by default), reading `sysfs`, and `procfs`
    and `rootfs` where given (the filesystem collector's mounts and statfs)."""

    def __init__(
        self,
        sysfs: Path,
        log: Path,
        *,
        collectors: Sequence[str] = ("infiniband",),
        procfs: Path | None = None,
        rootfs: Path | None = None,
    ) -> None:
        binary = debian_binary(
            "prometheus-node-exporter", "node_exporter", package="prometheus-node-exporter"
        )
        self.address = f"127.0.0.1:{closed_port()}"
        self.url = f"http://{self.address}/metrics"
        self.log = log
        paths = [f"--path.sysfs={sysfs}"]
        if procfs is not None:
            paths.append(f"--path.procfs={procfs}")
        if rootfs is not None:
            paths.append(f"--path.rootfs={rootfs}")
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                [
                    binary,
                    *paths,
                    "--collector.disable-defaults",
                    *(f"--collector.{name}" for name in collectors),
                    f"--web.listen-address={self.address}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def scrape(self) -> str:
        """Its /metrics text, once it answers (at most DEADLINE_S)."""

        def answer() -> str | None:
            if self.proc.poll() is not None:
                pytest.fail(f"node_exporter exited {self.proc.returncode}: {self.log.read_text()}")
            try:
                response = httpx.get(self.url, timeout=2)
            except httpx.HTTPError:
                return None
            return response.text if response.status_code == 200 else None

        return until(answer, "node_exporter to answer", [self.log])

    def stop(self) -> None:
        """Stop it."""
        stop(self.proc)


class PrometheusServer:
    """Prometheus (`kind` "prometheus") or VictoriaMetrics (any other) scraping `targets`
    (host:port) every second, on a free port; `labels` gives a target labels of its own
    (`instance` among them, as a site's relabelling would)."""

    def __init__(
        self,
        kind: str,
        binary: str,
        base: Path,
        targets: Sequence[str],
        labels: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        base.mkdir(parents=True, exist_ok=True)
        self.port = closed_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = base / f"{kind}.log"
        config = base / "scrape.yml"
        groups = []
        for target in targets:
            own = (labels or {}).get(target, {})
            extra = "".join(f"\n          {k}: '{v}'" for k, v in own.items())
            groups.append(
                f"      - targets: ['{target}']" + (f"\n        labels:{extra}" if own else "")
            )
        config.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
            "  - job_name: exporters\n    static_configs:\n" + "\n".join(groups) + "\n"
        )
        if kind == "prometheus":
            args = [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={base / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ]
            ready = "/-/ready"
        else:
            args = [
                binary,
                f"-promscrape.config={config}",
                f"-storageDataPath={base / 'data'}",
                f"-httpListenAddr=127.0.0.1:{self.port}",
                "-search.latencyOffset=0s",
                "-search.disableCache",
            ]
            ready = "/health"
        with self.log.open("w") as out:
            self.process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        until(lambda: self._ok(ready), f"{kind} to start", [self.log])

    def _ok(self, path: str) -> bool:
        if self.process.poll() is not None:
            pytest.fail(f"exited {self.process.returncode}:\n{self.log.read_text()[-3000:]}")
        try:
            return httpx.get(self.url + path, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def value(self, query: str) -> list[dict[str, Any]]:
        """The instant vector `query` answers now."""
        answer = httpx.post(self.url + "/api/v1/query", data={"query": query}, timeout=5).json()
        return answer["data"]["result"]

    def stop(self) -> None:
        """Stop it."""
        stop(self.process)


class CountingProxy(LoopbackServer):
    """Forwards every request to `upstream` and counts them: what KUAE asks Prometheus, and
    the size of each answer (bytes, as sent)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.requests: list[str] = []
        self.sizes: list[int] = []
        owner = self

        class Handler(QuietHandler):
            def _forward(self) -> None:
                owner.requests.append(f"{self.command} {self.path}")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() in ("content-type", "authorization")
                }
                try:
                    answer = httpx.request(
                        self.command,
                        owner.upstream + self.path,
                        content=body,
                        headers=headers,
                        timeout=10,
                    )
                except httpx.HTTPError:
                    return reply(self, 502)
                owner.sizes.append(len(answer.content))
                reply(
                    self,
                    answer.status_code,
                    answer.content,
                    answer.headers.get("content-type", "text/plain"),
                )

            do_GET = do_POST = _forward

        super().__init__(Handler)
