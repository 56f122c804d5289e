"""`pcie`: GPUs' and NICs' PCIe links and every reported device's AER error counts
(docs/checks.md, `pcie`).

Fails when a device's fatal AER count grew since the reading the previous run judged;
warns when a GPU's or NIC's link runs below its maximum width (a NIC's also below its
maximum speed), when the non-fatal count grew, or when the correctable count grew by more
than `pcie_aer_correctable_per_hour` within an hour. The incident's category is the
device's: `gpu`, `nic`, else `io_expansion_board` (a switch, a retimer, a riser).

A GPU's link speed is not judged: NVIDIA GPUs lower their link's speed when idle to save
power (keeping its width), so an idle GPU at 2.5 GT/s of 32 is no fault; its width is
judged always. Pure: plain values in, findings out.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING

from apps.fleet.choices import NodeState
from apps.health.detectors.findings import (
    Finding,
    Outcome,
    TargetType,
    declare_target,
    failed,
    number,
    passed,
    warned,
)
from apps.health.detectors.host_counters import HostHistory, growth, hourly, not_reported, unread
from apps.incidents.choices import Category, Severity

if TYPE_CHECKING:  # the check's thresholds, declared by its plug-in
    from apps.health.checks.pcie import PcieLimits

KIND = "pcie"
CATEGORY = {"gpu": Category.GPU, "nic": Category.NIC}
LINKED = ("gpu", "nic")  # the roles whose links are judged
WITHIN = "within limits"  # a device's pass with every counter reported
COUNTERS = ("aer_correctable_total", "aer_nonfatal_total", "aer_fatal_total")


# What one result is about: a GPU's or NIC's PCIe device (`pcie:HOST/0000:17:00.0`).
DEVICE = declare_target(TargetType("pcie", "PCIe device"))


def pcie_target(host: str, address: str) -> str:
    """The result target of one PCIe device of a node (`pcie:HOST/0000:17:00.0`)."""
    return DEVICE.make(host, address)


def _outcomes(role: str) -> tuple[Outcome, Outcome]:
    """What a failure and a warning of a device of `role` cause."""
    category = CATEGORY.get(role, Category.IO_EXPANSION_BOARD)
    return (
        Outcome(category, Severity.SEV2, interrupts_job=True, node_state=NodeState.DRAINED),
        Outcome(category, Severity.SEV3, node_state=NodeState.SUSPECT),
    )


def link_below(device: HostHistory) -> list[str]:
    """How a GPU's or NIC's link runs below its maximum, in words: its width (`x8 of x16`)
    and, for a NIC, its speed; nothing for other roles or where a value is not reported."""
    role = str(device.values.get("role") or "")
    if role not in LINKED:
        return []
    out = []
    width, widest = (
        number(device.values.get("link_width")),
        number(device.values.get("max_link_width")),
    )
    if width is not None and widest is not None and width < widest:
        out.append(f"link x{width:g} of x{widest:g}")
    speed = number(device.values.get("link_speed_gts"))
    fastest = number(device.values.get("max_link_speed_gts"))
    if role != "gpu" and speed is not None and fastest is not None and speed < fastest:
        out.append(f"link {speed:g} of {fastest:g} GT/s")
    return out


def pcie(devices: Sequence[HostHistory], *, limits: PcieLimits, now: dt.datetime) -> list[Finding]:
    """A finding for every PCIe device (see the module's docstring for the rows);
    `details.grew` keeps the hour's correctable growth for the next run."""
    out: list[Finding] = []
    for device in devices:
        target = pcie_target(device.node, device.subject)
        role = str(device.values.get("role") or "")
        down, degraded = _outcomes(role)
        fatal = growth(device, "aer_fatal_total")
        nonfatal = growth(device, "aer_nonfatal_total")
        correctable, kept = hourly(device, "aer_correctable_total", now)
        details: dict[str, object] = {
            "role": role,
            **{n: device.values.get(n) for n in COUNTERS},
            "aer_correctable_last_hour": correctable,
        }
        if kept:  # only then: the next run reads the results that hold it
            details["grew"] = {"aer_correctable_total": kept}
        what = f"{role} {device.subject}: " if role else ""
        if fatal > 0:
            message = f"{what}AER fatal errors +{fatal:g}"
            out.append(failed(KIND, target, message, details, outcome=down, node=device.node))
            continue
        reasons = link_below(device)
        if nonfatal > 0:
            reasons.append(f"AER non-fatal errors +{nonfatal:g}")
        if correctable > limits.pcie_aer_correctable_per_hour:
            reasons.append(
                f"{correctable:g} AER correctable errors within an hour > "
                f"{limits.pcie_aer_correctable_per_hour:g}"
            )
        if reasons:
            message = what + ", ".join(reasons)
            out.append(warned(KIND, target, message, details, outcome=degraded, node=device.node))
            continue
        missing = unread(device, COUNTERS)
        if missing:
            details["not_reported"] = missing
        out.append(
            passed(KIND, target, f"{WITHIN}{not_reported(missing)}", details, node=device.node)
        )
    return out
