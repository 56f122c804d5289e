"""One spelling for a GPU's PCI address, whoever reports it: pure, no Django.

dcgm-exporter's `pci_bus_id` label and nvidia-smi say `00000000:18:00.0` (eight-digit domain),
the kernel's `NVRM: Xid (PCI:0000:18:00)` has a four-digit domain and no function, lspci says
`18:00.0`. All of them become `0000:18:00.0`: lowercase, four-digit domain (eight when the
domain needs it), function 0 when none is given (a GPU is function 0 of its device).
"""

from __future__ import annotations

import re

_PCI = re.compile(
    r"^(?:pci:)?(?:(?P<domain>[0-9a-f]{1,8}):)?(?P<bus>[0-9a-f]{1,2}):(?P<device>[0-9a-f]{1,2})"
    r"(?:\.(?P<function>[0-7]))?$"
)


def pci_bus_normal(value: str) -> str:
    """`value` in the normal form `dddd:bb:dd.f`; ValueError when it is no PCI address."""
    match = _PCI.match(value.strip().lower()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{value!r} is not a PCI address like 0000:17:00.0")
    domain = int(match["domain"] or "0", 16)
    device = int(match["device"], 16)
    if device > 0x1F:
        raise ValueError(f"{value!r}: PCI device numbers go up to 1f")
    width = 4 if domain <= 0xFFFF else 8
    return f"{domain:0{width}x}:{int(match['bus'], 16):02x}:{device:02x}.{match['function'] or 0}"


def pci_bus_or_blank(value: str | None) -> str:
    """The normal form, or '' for a missing or unreadable address (labels we only keep)."""
    if not value:
        return ""
    try:
        return pci_bus_normal(value)
    except ValueError:
        return ""
