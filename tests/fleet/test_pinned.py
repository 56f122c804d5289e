"""The one pinned backend (apps/fleet/pinned.py): the scraper's deadline holds through it,
the httpx transport over it raises httpx's errors, and no code reaches into httpx's or
httpcore's private attributes to build a client."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpcore
import httpx
import pytest

from apps.fleet.destinations import DestinationRefused, parse_allow
from apps.fleet.pinned import PinnedBackend, pinned_transport
from tests.support import ExporterServer, closed_port

APPS = Path(__file__).resolve().parents[2] / "apps"
LOOPBACK = parse_allow(("127.0.0.0/8",))
# A client's private parts (`transport._pool`, `pool._network_backend`, `httpx._config`):
# what a pinned client once set by hand, and what a new httpx may rename without notice.
PRIVATE = re.compile(
    r"(?<!\bself)\._(?:pool|network_backend|transport|mounts)\b|\b(?:httpx|httpcore)\._\w"
)


def test_no_code_in_apps_reaches_into_httpx_or_httpcore_internals():
    found = [
        f"{path.relative_to(APPS.parent)}:{number}: {line.strip()}"
        for path in sorted(APPS.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE.search(line)
    ]
    assert found == []
    assert PRIVATE.search("transport._pool._network_backend = backend")  # what it catches


def test_the_deadline_holds_through_the_shared_backend():
    """A server that drips a byte a second never lets a 5 s per-read timeout run out; the
    backend's deadline, one second away, ends the answer all the same."""
    timeouts = {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}
    with ExporterServer() as server:
        start = time.monotonic()
        backend = PinnedBackend(LOOPBACK, deadline=start + 1.0)
        with (
            httpcore.ConnectionPool(network_backend=backend, retries=0) as pool,
            pytest.raises(httpcore.ReadTimeout),
            pool.stream("GET", f"{server.url}/drip", extensions={"timeout": timeouts}) as answer,
        ):
            for _ in answer.iter_stream():
                pass
        took = time.monotonic() - start
        assert server.server.hits == ["/drip"]
    assert 0.9 < took < 2.0, took
    # Past the deadline nothing is even connected to.
    with pytest.raises(httpcore.ConnectTimeout):
        PinnedBackend(LOOPBACK, deadline=time.monotonic() - 1).connect_tcp(
            "127.0.0.1", closed_port()
        )


def test_the_pinned_httpx_transport_raises_httpx_errors_and_the_rules_own():
    with (
        ExporterServer() as server,
        httpx.Client(transport=pinned_transport(["127.0.0.0/8"]), trust_env=False) as client,
    ):
        answer = client.get(f"{server.url}/metrics")
        assert answer.status_code == 200 and answer.text.startswith("#")
        with pytest.raises(httpx.ConnectError):
            client.get(f"http://127.0.0.1:{closed_port()}/")
        with pytest.raises(httpx.ReadTimeout):
            client.get(f"{server.url}/slow", timeout=0.3)
        with pytest.raises(DestinationRefused, match="link-local"):
            client.get("http://169.254.169.254/latest/meta-data/")
    with pytest.raises(httpcore.ConnectError, match="unix sockets"):
        PinnedBackend(LOOPBACK).connect_unix_socket("/run/slurmrestd.sock")
