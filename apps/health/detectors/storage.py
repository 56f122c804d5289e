"""`storage`: a cluster's required mounts on each node (docs/checks.md, `storage`).

A node that reports its filesystems must have every required mount, writable, with no
device error and with free space. A mount is missing when the node's newest filesystem
reading does not include it (its agent sends only the mounts it finds). A failing mount
names its device (`storage:<device>`, one NFS export or parallel filesystem) and how many
nodes report that device, so one broken export is one incident (blast radius). Pure: plain
values in, findings out.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
from apps.incidents.choices import Category, Severity
from apps.telemetry.mounts import MountState, in_newest_report, mount_state

if TYPE_CHECKING:  # the check's thresholds, declared by its plug-in
    from apps.health.checks.storage import StorageLimits

KIND = "storage"
BROKEN = Outcome(Category.STORAGE, Severity.SEV2, interrupts_job=True, node_state=NodeState.DRAINED)
LOW = Outcome(Category.STORAGE, Severity.SEV3)


# What one result is about: a node's mount, its point after a `:` since it holds slashes
# (`mount:HOST:/checkpoints`, "mount /checkpoints").
MOUNT = declare_target(TargetType("mount", "mount", ":"))


def mount_target(host: str, point: str) -> str:
    """The result target of one mount of a node (`mount:HOST:/checkpoints`)."""
    return MOUNT.make(host, point)


@dataclass(frozen=True)
class Mount:
    """One mount's latest reading on a node: when, and its values (`device`, `fstype`,
    `readonly`, `size_bytes`, `avail_bytes`, `device_error`)."""

    ts: dt.datetime
    values: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeFilesystems:
    """What one node reported of its filesystems: each mount point's latest reading, and
    the time of its newest one (a mount whose reading is older is no longer reported)."""

    node: str
    newest: dt.datetime
    mounts: Mapping[str, Mount] = field(default_factory=dict)

    def current(self, point: str) -> Mount | None:
        """The mount's reading when the node's newest report holds it, else None (the
        rule the node page's Host card shows too: apps/telemetry/mounts.py)."""
        mount = self.mounts.get(point)
        return mount if mount is not None and in_newest_report(mount.ts, self.newest) else None


def _device(mount: Mount | None) -> str:
    device = mount.values.get("device") if mount is not None else None
    return device if isinstance(device, str) else ""


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def _broken(node: NodeFilesystems, point: str) -> str:
    """Why the required mount fails on the node, in words ('' when it does not)."""
    mount = node.current(point)
    state = mount_state(None if mount is None else mount.values)
    if state is MountState.MISSING:
        return f"{point} is not mounted"
    if state is MountState.READ_ONLY:
        return f"{point} is read-only"
    if state is MountState.DEVICE_ERROR:
        return f"{point}: device error (statvfs failed)"
    return ""


def storage(
    nodes: Sequence[NodeFilesystems], *, required: Sequence[str], limits: StorageLimits
) -> list[Finding]:
    """A finding for every required mount of every node that reports filesystems: fail
    when it is missing, read-only or has a device error; warn when less than
    `storage_min_free_pct` of its size is available; else pass (saying what it could not
    judge). A fail names the mount's device as its component, with how many of `nodes`
    report that device, so an export broken on most of its nodes is one incident."""
    reporting: dict[str, set[str]] = defaultdict(set)
    for node in nodes:
        for reading in node.mounts.values():
            if _device(reading):
                reporting[_device(reading)].add(node.node)
    out: list[Finding] = []
    for node in nodes:
        for point in required:
            target = mount_target(node.node, point)
            mount = node.current(point)
            device = _device(node.mounts.get(point))
            details: dict[str, object] = {"mount": point}
            if device:
                details["device"] = device
            why = _broken(node, point)
            if why:
                out.append(
                    failed(
                        KIND,
                        target,
                        why + (f" ({device})" if device else ""),
                        details,
                        outcome=BROKEN,
                        node=node.node,
                        component=f"storage:{device}" if device else "",
                        component_size=len(reporting[device]) if device else 0,
                    )
                )
                continue
            assert mount is not None  # _broken's promise: a current reading
            out.append(_space(node.node, target, point, mount, details, limits))
    return out


def _space(
    node: str,
    target: str,
    point: str,
    mount: Mount,
    details: dict[str, object],
    limits: StorageLimits,
) -> Finding:
    """A writable mount's verdict on its free space: warn below the threshold, else pass."""
    size, avail = number(mount.values.get("size_bytes")), number(mount.values.get("avail_bytes"))
    if size is None or avail is None or size <= 0:
        details["not_reported"] = ["size_bytes", "avail_bytes"]
        return passed(
            KIND,
            target,
            f"{point} writable (free space not reported, not checked)",
            details,
            node=node,
        )
    pct = 100 * avail / size
    limit = limits.storage_min_free_pct
    if pct < limit:
        details.update(free_pct=round(pct, 2), avail_bytes=avail, size_bytes=size)
        message = f"{point}: {_gib(avail)} of {_gib(size)} free ({pct:.1f}% < {limit:g}%)"
        return warned(KIND, target, message, details, outcome=LOW, node=node)
    # A pass names no live figure: a mount that keeps passing is not rewritten each run as
    # its free space moves (docs/checks.md, `storage`).
    return passed(KIND, target, f"{point} writable, at least {limit:g}% free", details, node=node)
