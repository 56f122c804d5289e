"""The node's RDMA fabric ports (InfiniBand or RoCE) as the kernel shows them in sysfs:
`ROOT/class/infiniband/<device>/ports/<port>/` → the telemetry batch's `ports` items
(docs/agent.md, The node agent's fabric ports).

Only what the server takes is sent: a state by its name (one the kernel adds, such as
`5: ACTIVE_DEFER`, as it names it: never ACTIVE, never dropped), a rate it can read,
counters that are non-negative integers below 2**64. A file that is missing, unreadable or
holds something else is left out of its port, never an error; a port with nothing readable
is left out."""

from __future__ import annotations

import datetime as dt
import logging
import re
from pathlib import Path
from typing import Any

log = logging.getLogger("kuae_agent")

MAX_PORTS = 64  # the server keeps at most 64 ports per node
# The counters the fabric is judged on, by the sysfs folder that holds them.
COUNTERS = (
    "link_downed",
    "link_error_recovery",
    "symbol_error",
    "port_rcv_errors",
    "port_xmit_discards",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_rcv_remote_physical_errors",
    "port_xmit_wait",
)
HW_COUNTERS = ("rnr_nak_retry_err", "local_ack_timeout_err")
# As the kernel names them (drivers/infiniband/core/sysfs.c); another is sent as it reads.
STATES = ("NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER")
STATE_LENGTH = 32  # the most characters of a state's name the server keeps
PHYS_STATES = (
    "Sleep",
    "Polling",
    "Disabled",
    "PortConfigurationTraining",
    "LinkUp",
    "LinkErrorRecovery",
    "PhyTest",
)
_DEVICE = re.compile(r"[A-Za-z0-9_.-]{1,40}")
_PORT = re.compile(r"[0-9]{1,3}")
_NUMBERED = re.compile(r"\s*[0-9]+\s*:\s*(.+?)\s*")  # `4: ACTIVE`, `7: Phy Test`
_DIGITS = re.compile(r"\s*([0-9]{1,20})\s*")
_RATE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*Gb/sec\b.*", re.IGNORECASE | re.DOTALL)


class FabricReader:
    """Reads the ports under `sysfs`/class/infiniband each round; says once in the log when
    there are none, and once when there are more than MAX_PORTS."""

    def __init__(self, sysfs: Path = Path("/sys")) -> None:
        self.root = sysfs / "class" / "infiniband"
        self._said_none = False
        self._said_too_many = False

    def read(self, *, node: str, ts: dt.datetime) -> list[dict[str, Any]]:
        """The `ports` items of this round (at most MAX_PORTS, by device then port number)."""
        found = port_dirs(self.root)
        if not found and not self._said_none:
            log.warning("fabric: no InfiniBand or RoCE ports under %s; none sent", self.root)
            self._said_none = True
        if len(found) > MAX_PORTS and not self._said_too_many:
            log.warning("fabric: %d ports, only the first %d sent", len(found), MAX_PORTS)
            self._said_too_many = True
        stamp = ts.isoformat().replace("+00:00", "Z")
        items = []
        for device, port, path in found[:MAX_PORTS]:
            metrics = read_port(path)
            if metrics:
                items.append(
                    {"node": node, "device": device, "port": port, "ts": stamp, "metrics": metrics}
                )
        return items


def port_dirs(root: Path) -> list[tuple[str, int, Path]]:
    """(device, port number, folder) of every port under `root` (class/infiniband), sorted;
    names the server would not take are skipped; no `root` is no ports."""
    out = []
    try:
        devices = sorted(p for p in root.iterdir() if _DEVICE.fullmatch(p.name))
    except OSError:
        return []
    for device in devices:
        try:
            ports = [p for p in (device / "ports").iterdir() if _PORT.fullmatch(p.name)]
        except OSError:
            continue
        for port in sorted(ports, key=lambda p: int(p.name)):
            out.append((device.name, int(port.name), port))
    return out


def read_port(path: Path) -> dict[str, Any]:
    """One port folder's metrics: `state`, `phys_state` (as the server spells the words it
    knows, another by the name sysfs gives it),
    `rate_gbps`, and each counter of COUNTERS and HW_COUNTERS that reads as one."""
    metrics: dict[str, Any] = {}
    state = _word(_read(path / "state"), STATES)
    if state:
        metrics["state"] = state
    phys_state = _word(_read(path / "phys_state"), PHYS_STATES)
    if phys_state:
        metrics["phys_state"] = phys_state
    rate = _RATE.fullmatch(_read(path / "rate") or "")
    if rate:
        metrics["rate_gbps"] = float(rate.group(1))
    for folder, names in (("counters", COUNTERS), ("hw_counters", HW_COUNTERS)):
        for name in names:
            value = _counter(_read(path / folder / name))
            if value is not None:
                metrics[name] = value
    return metrics


def _read(file: Path) -> str | None:
    try:
        return file.read_text(errors="replace")
    except (OSError, ValueError):
        return None


def _word(text: str | None, names: tuple[str, ...]) -> str | None:
    """sysfs's `4: ACTIVE` or `7: Phy Test` → the name as the server spells it; a name not
    among `names` (`5: ACTIVE_DEFER` on an older table, one the kernel adds) as sysfs gives
    it, at most STATE_LENGTH characters that can be shown; None for an empty file."""
    if text is None:
        return None
    numbered = _NUMBERED.fullmatch(text)
    reported = (numbered.group(1) if numbered else text).strip()
    word = reported.replace(" ", "").lower()
    known = next((name for name in names if name.lower() == word), None)
    if known is not None:
        return known
    shown = "".join(c if c.isprintable() else "?" for c in reported[:STATE_LENGTH])
    return shown or None


def _counter(text: str | None) -> int | None:
    digits = _DIGITS.fullmatch(text or "")
    if digits is None:
        return None
    value = int(digits.group(1))
    return value if value < 2**64 else None
