"""What a new GPU sample means against the previous one: pure, no database."""

from __future__ import annotations

from dataclasses import dataclass

from apps.telemetry.names import COUNTER_EVENTS


@dataclass(frozen=True)
class Change:
    """An event worth keeping: kind, the new value, the previous one."""

    kind: str
    value: float
    previous: float | None


def changes(previous: dict[str, float], current: dict[str, float]) -> list[Change]:
    """Events between two samples of one GPU.

    - `xid`: a non-zero value that differs from the previous one (dcgm-exporter keeps the
      last XID until it restarts, so an unchanged value is not a new error);
    - counters (ECC, NVLink CRC, PCIe replay): growth is an event (`ecc_sbe`, `ecc_dbe`,
      `nvlink_crc`, `pcie_replay`) with the new and the previous count; a decrease is a reset
      (driver reload), noted once.
    """
    out: list[Change] = []
    xid = current.get("xid")
    if xid is not None and xid != 0 and xid != previous.get("xid"):
        out.append(Change("xid", xid, previous.get("xid")))
    for name, kind in COUNTER_EVENTS.items():
        new, old = current.get(name), previous.get(name)
        if new is None or old is None:
            continue
        if new > old:
            out.append(Change(kind, new, old))
        elif new < old:
            out.append(Change("counter_reset", new, old))
    return out
