"""The other names a node is known by (IP addresses, FQDNs): validation and the canonical
form they are stored and compared in. Pure."""

from __future__ import annotations

import ipaddress
import re

MAX_ADDRESSES = 16
# RFC 1123: labels of letters, digits and inner hyphens, 1–63 characters; ≤ 253 in all.
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def address_normalize(value: str) -> str | None:
    """The canonical form of an IP address (`::ffff:0a00:1` style compressed, v4 dotted) or
    a DNS name (lower case, no trailing dot); None when it is neither."""
    text = value.strip()
    if not text:
        return None
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    name = text.lower().removesuffix(".")
    if len(name) > 253 or not all(_LABEL.match(label) for label in name.split(".")):
        return None
    if name.replace(".", "").isdigit():
        return None  # "10.0.0.300" is a mistyped address, not a name
    return name


def addresses_clean(values: object) -> list[str]:
    """A node's `addresses` in canonical form, each once; ValueError naming the first bad one."""
    if not isinstance(values, list | tuple):
        raise ValueError("must be a list of IP addresses or DNS names")
    if len(values) > MAX_ADDRESSES:
        raise ValueError(f"at most {MAX_ADDRESSES} addresses per node")
    out: list[str] = []
    for value in values:
        canonical = address_normalize(value) if isinstance(value, str) else None
        if canonical is None:
            raise ValueError(f"{str(value)[:80]!r} is neither an IP address nor a DNS name")
        if canonical not in out:
            out.append(canonical)
    return out
