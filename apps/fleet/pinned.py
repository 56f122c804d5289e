"""Connections that go only to the address they checked (docs/operations.md, Pull-mode
destinations): the name in a URL is resolved once, every address it stands for is judged
by the destination rule (apps/fleet/destinations.py), and the connection goes to a checked
address — never a second lookup a rebinding DNS server could answer differently. The
request still carries the URL's host (the Host header, and the TLS server name and
certificate check), so a name-based virtual host or a certificate for the name works.

One backend, PinnedBackend, for every such client: the scraper's httpcore pool, with a
deadline over the whole scrape (apps/telemetry/services/scrape.py), and, through
PinnedTransport, the httpx clients of the Prometheus source and slurmrestd over http(s).
Both are built on httpcore's and httpx's public API only (`network_backend=`,
`httpx.BaseTransport`), never on a client's private attributes.
"""

from __future__ import annotations

import contextlib
import ssl
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import httpcore
import httpx

from apps.fleet.destinations import IPAddress, IPNetwork, checked_addresses, parse_allow

# Name lookups under a deadline run here, off the caller's thread: a lookup cannot be
# cancelled, so it is waited for only until the deadline.
_RESOLVER = ThreadPoolExecutor(max_workers=32, thread_name_prefix="pinned-dns")


def _left(deadline: float, timeout: float | None, error: type[Exception]) -> float:
    """The seconds to allow an operation: `timeout`, cut to what is left before
    `deadline`; `error` when nothing is left."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read, write and TLS handshake ends by `deadline`."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: float) -> None:
        self._inner, self._deadline = inner, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(self._deadline, timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(self._deadline, timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(self._deadline, timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(
            self._inner.start_tls(ssl_context, server_hostname, left), self._deadline
        )

    def get_extra_info(self, info: str) -> object:
        return self._inner.get_extra_info(info)


class PinnedBackend(httpcore.NetworkBackend):
    """Resolves and judges each host once per connection and connects to a checked address;
    DestinationRefused or Unresolvable (apps/fleet/destinations.py) when there is none.

    With a `deadline` (a time.monotonic() value), the lookup, the connect, the TLS
    handshake and every read and write of the connection end by it (httpcore's
    ConnectTimeout, ReadTimeout or WriteTimeout): a server that drips a byte a second
    cannot keep a per-read timeout from running out."""

    def __init__(self, allow: Sequence[IPNetwork], deadline: float | None = None) -> None:
        self._allow, self._deadline = allow, deadline
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        """A connection to the first checked address of `host` that answers."""
        error: Exception = httpcore.ConnectError(f"{host}: no address to connect to")
        for address in self._resolve(host, port):
            if self._deadline is not None:
                timeout = _left(self._deadline, timeout, httpcore.ConnectTimeout)
            try:
                stream = self._backend.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except httpcore.ConnectError as exc:
                error = exc
                continue
            return stream if self._deadline is None else _DeadlineStream(stream, self._deadline)
        raise error

    def _resolve(self, host: str, port: int) -> list[IPAddress]:
        """The checked addresses of `host`; under a deadline, by it — the lookup runs in a
        thread of its own, so a name that takes long to resolve cannot hold the caller."""
        if self._deadline is None:
            return checked_addresses(host, port, self._allow)
        future = _RESOLVER.submit(checked_addresses, host, port, self._allow)
        try:
            return future.result(timeout=max(self._deadline - time.monotonic(), 0))
        except FutureTimeout as exc:
            raise httpcore.ConnectTimeout("name resolution passed the deadline") from exc

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        """Never: a pinned client speaks TCP only."""
        raise httpcore.ConnectError("a pinned client does not use unix sockets")

    def sleep(self, seconds: float) -> None:
        """As the default backend."""
        time.sleep(seconds)


# httpcore's errors as httpx's, the most specific first (as httpx.HTTPTransport maps them),
# so callers catch httpx.HTTPError and its kinds as with any httpx client. Anything else
# (DestinationRefused, Unresolvable) passes through as raised.
_HTTPX_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for core, mapped in _HTTPX_ERRORS:
            if isinstance(exc, core):
                raise mapped(str(exc)) from exc
        raise


class _Body(httpx.SyncByteStream):
    """An answer's body as httpx reads it, its errors as httpx's."""

    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx_errors():
            yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class PinnedTransport(httpx.BaseTransport):
    """An httpx transport over an httpcore pool whose backend is PinnedBackend: HTTP/1.1,
    no proxy (nor anything else) from the environment, certificates checked against the
    system's CAs for the URL's host."""

    def __init__(self, allow: Sequence[IPNetwork]) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=100,  # httpx's default limits
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=PinnedBackend(allow),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """`request` sent over the pool, mapped as httpx.HTTPTransport maps it."""
        assert isinstance(request.stream, httpx.SyncByteStream)
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            answer = self._pool.handle_request(core)
        assert isinstance(answer.stream, Iterable)
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_Body(answer.stream),
            extensions=answer.extensions,
        )

    def close(self) -> None:
        """Close the pool's connections (also on leaving a `with` block)."""
        self._pool.close()


def pinned_transport(allow: Iterable[str]) -> PinnedTransport:
    """An httpx transport whose connections go only to addresses `allow`
    (KUAE_SCRAPE_ALLOW's entries) and the rule permit, pinned as above."""
    return PinnedTransport(parse_allow(tuple(allow)))
