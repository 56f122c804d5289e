"""Where KUAE may connect: the one destination rule for every URL it fetches that someone
typed — a node's `exporter_url`, a cluster's `prometheus_url` and its slurmrestd `url`
(docs/operations.md, Pull-mode destinations).

An `exporter_url` is written by an operator and answered by a node that runs users' code,
so it must not reach what only the server can: the cloud metadata service, the database
port on loopback, the server's own admin endpoints. The rule, checked on every address a
name resolves to (at registration, and again when fetching, on the address connected to —
apps/fleet/pinned.py resolves once and connects to the address it checked):

- only `http` and `https` URLs with a host;
- loopback, link-local (the metadata service lives there), the cloud metadata addresses,
  unspecified, multicast, reserved and the other IANA special-purpose ranges (192.0.0.0/24,
  the documentation and benchmarking networks, 2001::/23, …) are refused, unless
  KUAE_SCRAPE_ALLOW lists a network inside that range itself (`127.0.0.0/8`,
  `169.254.169.254/32`) — `0.0.0.0/0` does not let them through;
- a site's own private networks (10/8, 172.16/12, 192.168/16, fc00::/7) and any other
  address are allowed while KUAE_SCRAPE_ALLOW is empty, and otherwise only inside one of
  its networks (production: the nodes' subnets, so the database's subnet is out).

IPv4 addresses written in IPv6 (`::ffff:127.0.0.1`, the deprecated IPv4-compatible
`::127.0.0.1`, 6to4, NAT64 `64:ff9b::/96`) are judged by the IPv4 address they carry as
well, and the IPv4-compatible and IPv4-translated forms are refused themselves.
"""

from __future__ import annotations

import functools
import ipaddress
import posixpath
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
    ("deprecated IPv4-compatible IPv6", ("::/96",)),
    ("IPv4-translated IPv6", ("::ffff:0:0:0/96",)),
    (
        "IANA special-purpose",
        (
            "192.0.0.0/24",
            "192.0.2.0/24",
            "192.88.99.0/24",
            "198.18.0.0/15",
            "198.51.100.0/24",
            "203.0.113.0/24",
            "100::/64",
            "2001::/23",
            "2001:db8::/32",
            "3fff::/20",
            "5f00::/16",
            "64:ff9b:1::/48",
            "fec0::/10",
        ),
    ),
)
# A site's own private networks: allowed (a site's Prometheus and exporters live there).
SITE = tuple(
    ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
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
        if int(address) >> 32 in (0, 0xFFFF0000) and int(address) > 1:
            yield ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)  # ::a.b.c.d, ::ffff:0:a.b.c.d
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
        ) or _flagged(view)
        if special is not None:
            kind, net = special
            if not any(n.subnet_of(net) for n in listed):  # type: ignore[arg-type]
                article = "an" if kind[0] in "aeiouAEIOU" else "a"
                return f"{address} is {article} {kind} address, not listed in KUAE_SCRAPE_ALLOW"
        elif allow and not listed:
            return f"{address} is outside KUAE_SCRAPE_ALLOW"
    return None


def _flagged(view: IPAddress) -> tuple[str, IPNetwork] | None:
    """What Python's `ipaddress` knows to be special about `view` that the table does not
    name (a range IANA adds later): its kind and the address itself as the network an
    allow entry must name. An IPv6 address carrying an IPv4 one is judged by that one."""
    if isinstance(view, ipaddress.IPv6Address) and (
        view.ipv4_mapped is not None or view.sixtofour is not None or view in _NAT64
    ):
        return None
    if any(view in n for n in SITE if n.version == view.version):
        return None
    flags = ("is_private", "is_reserved", "is_link_local", "is_multicast", "is_unspecified")
    if any(getattr(view, flag) for flag in flags) or getattr(view, "is_site_local", False):
        return "special-purpose", ipaddress.ip_network(view)
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


def url_refusal(url: str, allow: Iterable[str], *, resolve: bool = True) -> str | None:
    """Why KUAE may not fetch `url` (an exporter, a Prometheus, a slurmrestd): not an
    http(s) URL with a host, a bad port, or a host that is or resolves to an address the
    rule refuses. A name that does not resolve now passes (it is checked again, and pinned,
    when fetched); `resolve=False` judges only the URL's form and a literal address.
    None when the URL may be used."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "has a bad port or host"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http(s) URL with a host"
    if not resolve and _literal(parts.hostname) is None:
        return None
    try:
        checked_addresses(parts.hostname, port, parse_allow(tuple(allow)))
    except DestinationRefused as exc:
        return str(exc)
    except Unresolvable:
        return None
    return None


def slurmrestd_url_refusal(url: str, allow: Iterable[str]) -> str | None:
    """Why a cluster's slurmrestd `url` may not be used (KUAE sends it the Slurm JWT): an
    http(s) URL is judged by `url_refusal`, the one rule; a local socket (`unix:/path`) must
    be slurmrestd's own — an absolute, normalised path whose file name names `slurmrestd`
    (`unix:/run/slurmrestd/slurmrestd.sock`), so not `unix:/var/run/docker.sock`. None
    when it may be used."""
    if url.startswith("unix:"):
        path = url.removeprefix("unix:")
        name = posixpath.basename(path)
        if not path.startswith("/") or posixpath.normpath(path) != path:
            return "a unix socket must be an absolute, normalised path (unix:/path/to/socket)"
        if "slurmrestd" not in name:
            return (
                f"unix:{path} is not slurmrestd's socket: its file name must name slurmrestd "
                "(unix:/run/slurmrestd/slurmrestd.sock)"
            )
        return None
    return url_refusal(url, allow)
