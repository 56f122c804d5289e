"""What the node's host says about itself, read from the kernel each round → the telemetry
batch's `host` items, `{node, kind, subject, ts, values}` (docs/agent.md, Host readings):

- `memory`, one per EDAC memory controller (`mc0`): `ROOT/devices/system/edac/mc/mc*/`
  `ce_count`, `ue_count` → `ce_total`, `ue_total`;
- `pcie`, one per GPU or NIC by its PCI address: `ROOT/bus/pci/devices/*/` `class`, the link's
  width and speed against their maximum, and the `TOTAL_ERR_*` lines of its AER counters;
- `filesystem`, one per mount point of a real filesystem in `PROCFS/self/mounts` (the
  required mounts first), `os.statvfs` of `ROOTFS/<mount point>` for its size;
- `clock`, `system`: adjtimex's offset and whether the kernel counts the clock synchronised;
- `vmstat`, `kernel`: `PROCFS/vmstat`'s `oom_kill` → `oom_kill_total` (Linux 4.13 and later).

A value sysfs does not hold (a driver without AER, a link speed that reads `Unknown`) is left
out of its item, never sent as 0. What a node has none of (no EDAC driver loaded, no
adjtimex) is said once in the log and sent as nothing.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kuae_agent.timex import ClockReading, ClockUnavailable, read_clock

log = logging.getLogger("kuae_agent")

# The most items of each kind a round sends: the server keeps at most 256 subjects a node.
MAX_MEMORY = 32
MAX_PCIE = 128
MAX_FILESYSTEMS = 64
MAX_SUBJECT = 255  # characters of a mount point; a longer one is not sent
STAT_TIMEOUT_S = 5.0  # a statvfs that takes longer is a device error (a hung NFS server)

# Filesystems that hold no data of their own: never sent (the server does not store them).
PSEUDO_FILESYSTEMS = frozenset(
    {
        "autofs",
        "binfmt_misc",
        "bpf",
        "cgroup",
        "cgroup2",
        "configfs",
        "debugfs",
        "devpts",
        "devtmpfs",
        "efivarfs",
        "erofs",
        "fuse.gvfsd-fuse",
        "fuse.lxcfs",
        "fusectl",
        "hugetlbfs",
        "iso9660",
        "mqueue",
        "nsfs",
        "overlay",
        "proc",
        "pstore",
        "ramfs",
        "rpc_pipefs",
        "securityfs",
        "selinuxfs",
        "squashfs",
        "sysfs",
        "tmpfs",
        "tracefs",
    }
)
# Mount points that are the system's or a container runtime's (as node_exporter leaves them
# out); a required mount is sent even there.
SYSTEM_MOUNTS = re.compile(
    r"/(dev|proc|sys|run/credentials/.+|var/lib/docker/.+|var/lib/containers/storage/.+)(/.*)?"
)

# PCI classes (`class` is 0xCCSSPP: class, subclass, programming interface).
GPU_CLASSES = frozenset({0x0300, 0x0302})  # VGA-compatible, 3D controller
NIC_CLASSES = frozenset({0x0200, 0x0207})  # Ethernet, InfiniBand
# Display controllers that are a server's BMC console, not a GPU: ASPEED, Matrox.
BMC_VENDORS = frozenset({0x1A03, 0x102B})
AER = (
    ("aer_dev_correctable", "TOTAL_ERR_COR", "aer_correctable_total"),
    ("aer_dev_nonfatal", "TOTAL_ERR_NONFATAL", "aer_nonfatal_total"),
    ("aer_dev_fatal", "TOTAL_ERR_FATAL", "aer_fatal_total"),
)

_MC = re.compile(r"mc([0-9]{1,4})")
_PCI_ADDRESS = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_DIGITS = re.compile(r"\s*([0-9]{1,20})\s*")
_SPEED = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s\b.*", re.DOTALL)
_ESCAPE = re.compile(r"\\([0-7]{3})")  # /proc/self/mounts writes ' ' as \040

StatVfs = Callable[[str], os.statvfs_result]
Clock = Callable[[], ClockReading]


class HostReader:
    """Reads the host each round. `sysfs`, `procfs` and `rootfs` are where the kernel's trees
    and the mounts are seen (a test's tree); `mounts` are the cluster's required mounts;
    `statvfs` and `clock` are the calls that read sizes and the clock (a test's stand-ins)."""

    def __init__(
        self,
        *,
        sysfs: Path = Path("/sys"),
        procfs: Path = Path("/proc"),
        rootfs: Path = Path("/"),
        mounts: Sequence[str] = (),
        statvfs: StatVfs = os.statvfs,
        clock: Clock = read_clock,
        stat_timeout_s: float = STAT_TIMEOUT_S,
    ) -> None:
        self.sysfs = sysfs
        self.procfs = procfs
        self.rootfs = rootfs
        self.required = list(dict.fromkeys(_normal(m) for m in mounts))
        self.statvfs = statvfs
        self.clock = clock
        self.stat_timeout_s = stat_timeout_s
        self._stuck: dict[str, threading.Thread] = {}  # statvfs calls that have not returned
        self._said: set[str] = set()

    def read(self, *, node: str, ts: dt.datetime) -> list[dict[str, Any]]:
        """The `host` items of this round: memory controllers, PCIe devices, filesystems,
        the clock, then the kernel's out-of-memory kills."""
        stamp = ts.isoformat().replace("+00:00", "Z")
        readings = [
            *(("memory", s, v) for s, v in self.memory()),
            *(("pcie", s, v) for s, v in self.pcie()),
            *(("filesystem", s, v) for s, v in self.filesystems()),
            *(("clock", s, v) for s, v in self.clock_reading()),
            *(("vmstat", s, v) for s, v in self.vmstat()),
        ]
        return [
            {"node": node, "kind": kind, "subject": subject, "ts": stamp, "values": values}
            for kind, subject, values in readings
        ]

    def memory(self) -> list[tuple[str, dict[str, Any]]]:
        """(`mcN`, values) of each EDAC memory controller, by number."""
        root = self.sysfs / "devices" / "system" / "edac" / "mc"
        found = []
        for folder in _listing(root):
            match = _MC.fullmatch(folder.name)
            if match:
                found.append((int(match.group(1)), folder))
        if not found:
            self._say_once("memory", f"host: no EDAC memory controllers under {root}; none sent")
        out = []
        for _, folder in sorted(found)[:MAX_MEMORY]:
            values = {}
            for file, name in (("ce_count", "ce_total"), ("ue_count", "ue_total")):
                value = _counter(_read(folder / file))
                if value is not None:
                    values[name] = value
            if values:
                out.append((folder.name, values))
        return out

    def pcie(self) -> list[tuple[str, dict[str, Any]]]:
        """(PCI address, values) of each GPU and NIC (physical functions only), by address."""
        root = self.sysfs / "bus" / "pci" / "devices"
        out = []
        for folder in sorted(_listing(root), key=lambda p: p.name):
            if not _PCI_ADDRESS.fullmatch(folder.name) or (folder / "physfn").exists():
                continue  # an SR-IOV virtual function shares its parent's link
            role = pci_role(_read(folder / "class"), _read(folder / "vendor"))
            if role is not None:
                out.append((folder.name, {"role": role} | read_link(folder)))
        if len(out) > MAX_PCIE:
            self._say_once("pcie", f"host: {len(out)} GPUs and NICs, only the first {MAX_PCIE}")
        return out[:MAX_PCIE]

    def filesystems(self) -> list[tuple[str, dict[str, Any]]]:
        """(mount point, values) of the required mounts that are mounted, then of every other
        real filesystem by mount point; a required mount not mounted is not sent."""
        table = self.procfs / "self" / "mounts"
        text = _read(table)
        if text is None:
            self._say_once("mounts", f"host: cannot read {table}; no filesystems sent")
            return []
        mounted = parse_mounts(text)
        chosen = [m for m in self.required if m in mounted]
        for point in self.required:
            fstype = mounted[point][1] if point in mounted else None
            if fstype in PSEUDO_FILESYSTEMS:
                self._say_once(
                    f"pseudo {point}",
                    f"host: required mount {point} is a {fstype}, which is not stored; not sent",
                )
        chosen += sorted(m for m in mounted if m not in chosen and not SYSTEM_MOUNTS.fullmatch(m))
        chosen = [
            m for m in chosen if mounted[m][1] not in PSEUDO_FILESYSTEMS and len(m) <= MAX_SUBJECT
        ]
        if len(chosen) > MAX_FILESYSTEMS:
            self._say_once(
                "filesystems",
                f"host: {len(chosen)} filesystems, only the first {MAX_FILESYSTEMS} sent",
            )
        out = []
        for point in chosen[:MAX_FILESYSTEMS]:
            device, fstype, readonly = mounted[point]
            values: dict[str, Any] = {"device": device, "fstype": fstype, "readonly": readonly}
            stat = self._stat(point)
            if stat is None:
                values["device_error"] = 1
            else:
                unit = stat.f_frsize or stat.f_bsize
                values |= {
                    "size_bytes": stat.f_blocks * unit,
                    "avail_bytes": stat.f_bavail * unit,
                    "device_error": 0,
                }
            out.append((point, values))
        return out

    def clock_reading(self) -> list[tuple[str, dict[str, Any]]]:
        """(`system`, values) of the clock, or nothing where it cannot be read."""
        try:
            clock = self.clock()
        except ClockUnavailable as exc:
            self._say_once("clock", f"host: {exc}; no clock reading")
            return []
        return [("system", {"offset_s": clock.offset_s, "synced": int(clock.synced)})]

    def vmstat(self) -> list[tuple[str, dict[str, Any]]]:
        """(`kernel`, values) of the kernel's out-of-memory kills, or nothing where
        `/proc/vmstat` has no `oom_kill` line (a kernel before 4.13)."""
        for line in (_read(self.procfs / "vmstat") or "").splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                count = _counter(value.strip())
                if count is not None:
                    return [("kernel", {"oom_kill_total": count})]
        self._say_once("vmstat", f"host: no oom_kill in {self.procfs / 'vmstat'}; none sent")
        return []

    def _stat(self, point: str) -> os.statvfs_result | None:
        """statvfs of ROOTFS/point; None when it raised or did not return in time (a mount
        whose call has not returned is not asked again until it does)."""
        waiting = self._stuck.get(point)
        if waiting is not None:
            if waiting.is_alive():
                return None
            del self._stuck[point]
        path = str(self.rootfs / point.lstrip("/"))
        answer: dict[str, os.statvfs_result] = {}
        failed: list[OSError] = []

        def call() -> None:
            try:
                answer["stat"] = self.statvfs(path)
            except OSError as exc:
                failed.append(exc)

        worker = threading.Thread(target=call, name=f"statvfs {point}", daemon=True)
        worker.start()
        worker.join(self.stat_timeout_s)
        if worker.is_alive():
            self._stuck[point] = worker
            timeout = self.stat_timeout_s
            self._say_once(point, f"host: statvfs({path}) did not return in {timeout:g} s")
            return None
        if failed:
            self._say_once(point, f"host: statvfs({path}) failed: {failed[0]}")
            return None
        self._said.discard(point)  # it answers again: say the next failure
        return answer["stat"]

    def _say_once(self, key: str, message: str) -> None:
        if key not in self._said:
            self._said.add(key)
            log.warning("%s", message)


def parse_mounts(text: str) -> dict[str, tuple[str, str, int]]:
    """`/proc/self/mounts` → {mount point: (device, fstype, readonly 0/1)}; a point mounted
    over another is the one seen, the later line."""
    mounted = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4 or not fields[1].startswith("/"):
            continue
        device, point, fstype, options = (_unescape(f) for f in fields[:4])
        mounted[_normal(point)] = (device, fstype, int("ro" in options.split(",")))
    return mounted


def pci_role(klass: str | None, vendor: str | None) -> str | None:
    """`gpu` for a display or 3D controller (not a BMC's console), `nic` for an Ethernet or
    InfiniBand controller, None for anything else or a class that does not read."""
    try:
        code = int((klass or "").strip(), 16) >> 8
    except ValueError:
        return None
    if code in GPU_CLASSES:
        try:
            maker = int((vendor or "").strip(), 16)
        except ValueError:
            maker = None
        return None if maker in BMC_VENDORS else "gpu"
    return "nic" if code in NIC_CLASSES else None


def read_link(folder: Path) -> dict[str, Any]:
    """A PCI device folder's link width and speed against their maximum, and its AER totals;
    a file that is missing or does not read as its kind of value is left out."""
    values: dict[str, Any] = {}
    for file, name in (("current_link_width", "link_width"), ("max_link_width", "max_link_width")):
        width = _counter(_read(folder / file))
        if width is not None:
            values[name] = width
    for file, name in (
        ("current_link_speed", "link_speed_gts"),
        ("max_link_speed", "max_link_speed_gts"),
    ):
        speed = _SPEED.fullmatch(_read(folder / file) or "")
        if speed:
            values[name] = float(speed.group(1))
    for file, line, name in AER:
        total = aer_total(_read(folder / file), line)
        if total is not None:
            values[name] = total
    return values


def aer_total(text: str | None, label: str) -> int | None:
    """The count on an AER file's `label N` line (`TOTAL_ERR_COR 3`), None without one."""
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == label:
            return _counter(fields[1])
    return None


def _listing(root: Path) -> list[Path]:
    try:
        return list(root.iterdir())
    except OSError:
        return []


def _normal(point: str) -> str:
    """A mount point as /proc/self/mounts spells it: no trailing slash but the root's."""
    return point.rstrip("/") or "/"


def _unescape(field: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def _read(file: Path) -> str | None:
    try:
        return file.read_text(errors="replace")
    except (OSError, ValueError):
        return None


def _counter(text: str | None) -> int | None:
    digits = _DIGITS.fullmatch(text or "")
    if digits is None:
        return None
    value = int(digits.group(1))
    return value if value < 2**64 else None
