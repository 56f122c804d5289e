"""Where the scraper may connect: exporter destinations an admin allows (KUAE_SCRAPE_ALLOW).

An `exporter_url` is written by an operator and answered by a node that runs users' code,
so it must not reach what only the server can: the cloud metadata service, the database
port on loopback, the server's own admin endpoints. The rule, checked on every address a
name resolves to (at registration and again at every scrape, on the address connected to):

- loopback, link-local (the metadata service lives there), the cloud metadata addresses,
  unspecified, multicast and reserved addresses are refused, unless KUAE_SCRAPE_ALLOW lists
  a network inside that range itself (`127.0.0.0/8`, `169.254.169.254/32`) — `0.0.0.0/0`
  does not let them through;
- any other address is allowed while KUAE_SCRAPE_ALLOW is empty, and otherwise only inside
  one of its networks (production: the nodes' subnets, so the database's subnet is out).

IPv4 addresses written in IPv6 (`::ffff:127.0.0.1`, 6to4, NAT64 `64:ff9b::/96`) are judged
by the IPv4 address they carry as well.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from collections.abc import Iterable, Iterator, Sequence
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Ranges never scraped unless an allow entry inside them names them; first match names it.
SPECIAL: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("loopback", ("127.0.0.0/8", "::1/128")),
    ("cloud metadata", ("100.100.100.200/32", "fd00:ec2::254/128")),
    ("link-local", ("169.254.0.0/16", "fe80::/10")),
    ("unspecified", ("0.0.0.0/8", "::/128")),
    ("multicast", ("224.0.0.0/4", "ff00::/8")),
    ("reserved", ("240.0.0.0/4",)),  # with 255.255.255.255
)
_SPECIAL = tuple((kind, ipaddress.ip_network(net)) for kind, nets in SPECIAL for net in nets)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class DestinationRefused(Exception):
    """The destination is not one the scraper may connect to; the message says why."""


class Unresolvable(Exception):
    """The host name does not resolve (now)."""


@functools.lru_cache(maxsize=16)
def parse_allow(entries: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    """KUAE_SCRAPE_ALLOW's networks; ValueError names a bad entry."""
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError as exc:
            raise ValueError(f"{entry!r} is not a network (CIDR such as 10.0.0.0/8)") from exc
    return tuple(networks)


def _views(address: IPAddress) -> Iterator[IPAddress]:
    """The address, and any IPv4 address it carries."""
    yield address
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            yield address.ipv4_mapped
        if address.sixtofour is not None:
            yield address.sixtofour
        if address in _NAT64:
            yield ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)


def refusal(address: IPAddress, allow: Sequence[IPNetwork]) -> str | None:
    """Why `address` may not be scraped under `allow`, or None when it may."""
    for view in _views(address):
        listed = [n for n in allow if n.version == view.version and view in n]
        special = next(
            ((kind, net) for kind, net in _SPECIAL if net.version == view.version and view in net),
            None,
        )
        if special is not None:
            kind, net = special
            if not any(n.subnet_of(net) for n in listed):  # type: ignore[arg-type]
                return f"{address} is a {kind} address, not listed in KUAE_SCRAPE_ALLOW"
        elif allow and not listed:
            return f"{address} is outside KUAE_SCRAPE_ALLOW"
    return None


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address `host` stands for (itself when it is an address), in resolver order;
    Unresolvable when the name does not resolve."""
    literal = _literal(host)
    if literal is not None:
        return [literal]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise Unresolvable(f"{host} does not resolve") from exc
    found: dict[IPAddress, None] = {}
    for *_, sockaddr in infos:
        found[ipaddress.ip_address(str(sockaddr[0]).split("%")[0])] = None
    if not found:
        raise Unresolvable(f"{host} does not resolve")
    return list(found)


def checked_addresses(host: str, port: int, allow: Sequence[IPNetwork]) -> list[IPAddress]:
    """The addresses to connect to for `host`: all of them allowed, or DestinationRefused
    (a name with one forbidden address among allowed ones is refused whole)."""
    addresses = resolve(host, port)
    for address in addresses:
        reason = refusal(address, allow)
        if reason is not None:
            raise DestinationRefused(reason if _literal(host) else f"{host}: {reason}")
    return addresses


def url_refusal(url: str, allow: Iterable[str]) -> str | None:
    """Why an exporter URL may not be registered: its host is or resolves to an address the
    scraper refuses. A name that does not resolve now passes (it is checked at every
    scrape); None when the URL may be registered."""
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        checked_addresses(parts.hostname, port, parse_allow(tuple(allow)))
    except DestinationRefused as exc:
        return str(exc)
    except Unresolvable:
        return None
    return None
