"""HTTP clients that connect only to the address they checked (docs/operations.md, Pull-mode
destinations): the name in a URL is resolved once, every address it stands for is judged
by the destination rule (apps/fleet/destinations.py), and the connection goes to a checked
address — never a second lookup a rebinding DNS server could answer differently. The
request still carries the URL's host (the Host header, and the TLS server name and
certificate check), so a name-based virtual host or a certificate for the name works.

Used by the Prometheus source and slurmrestd over http(s); the scraper has its own
deadline-bound variant (apps/telemetry/services/scrape.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import httpcore
import httpx

from apps.fleet.destinations import IPNetwork, checked_addresses, parse_allow


class PinnedBackend(httpcore.NetworkBackend):
    """Resolves and judges each host once per connection and connects to a checked address;
    DestinationRefused or Unresolvable (apps/fleet/destinations.py) when there is none."""

    def __init__(self, allow: Sequence[IPNetwork]) -> None:
        self._allow = allow
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
        for address in checked_addresses(host, port, self._allow):
            try:
                return self._backend.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except httpcore.ConnectError as exc:
                error = exc
        raise error

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
        self._backend.sleep(seconds)


def pinned_transport(allow: Iterable[str]) -> httpx.HTTPTransport:
    """An httpx transport (no proxy from the environment) whose connections go only to
    addresses `allow` (KUAE_SCRAPE_ALLOW's entries) and the rule permit, pinned as above."""
    transport = httpx.HTTPTransport(trust_env=False)
    transport._pool._network_backend = PinnedBackend(parse_allow(tuple(allow)))  # noqa: SLF001
    return transport
