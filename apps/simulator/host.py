"""The simulated nodes' host readings (docs/simulator.md, Host readings): what each node's
agent (`kuae-agent run --host`) would report of its host — two memory controllers, the
cluster's mounts, the PCIe devices of its GPUs and NICs, its clock — written at `simulate`
and read again on every live tick through the telemetry intake's host write
(`apps.telemetry.services.host_ingest`), so the host checks have something to judge.

Counters grow slowly and never go down; the shared checkpoint export's free space is one
function of the time, the same on every node; a host fault (`HOST_FAULTS`, one table of
them) changes one node's reading as its row says.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass

from apps.fleet.choices import NodeState
from apps.fleet.models import Cluster
from apps.telemetry.host import HostReadingIn
from apps.telemetry.host_kinds import Source
from apps.telemetry.models import HostReading

MEMORY_CONTROLLERS = ("mc0", "mc1")  # one a CPU socket, as EDAC names them
# The PCI buses of a node's eight GPUs and of its eight NICs (one 400G rail a GPU, each NIC
# beside its GPU under the same PCIe switch), as an HGX H100 node lays them out.
GPU_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)
NIC_BUSES = (0x17, 0x29, 0x39, 0x5C, 0x99, 0xAA, 0xB9, 0xDA)
# Every simulated GPU (H100 SXM5, MI300X, MTT S4000, Gaudi 3) and NIC (ConnectX-7) is a
# PCIe Gen5 x16 device: 16 lanes at 32 GT/s.
LANES = 16
GEN5_GTS = 32.0
TRAINED_DOWN_WIDTH = 8  # a link fault's width


@dataclass(frozen=True)
class Mount:
    """One mount every simulated node has: its point, device, type and size in bytes."""

    point: str
    device: str
    fstype: str
    size_bytes: int
    shared: bool = False  # one export every node mounts: the same free space on all


ROOT = Mount("/", "/dev/nvme0n1p2", "ext4", 1_888_232_914_944)  # a 1.92 TB boot NVMe
CHECKPOINTS = Mount("/checkpoints", "nas01:/ckpt", "nfs4", 2 * 2**50, shared=True)  # 2 PiB
SCRATCH = Mount("/scratch", "/dev/md0", "xfs", 30_717_929_521_152)  # 8 × 3.84 TB NVMe, RAID 0
MOUNTS = (ROOT, CHECKPOINTS, SCRATCH)
# The mounts a simulated cluster requires of every node, which its `storage` check judges
# (docs/checks.md, `storage`).
REQUIRED_MOUNTS = [CHECKPOINTS.point, SCRATCH.point]
_BY_POINT = {m.point: m for m in MOUNTS}


def gpu_address(index: int) -> str:
    """The PCI address of a node's `index`th GPU (`0000:18:00.0`, …)."""
    return f"0000:{GPU_BUSES[index % len(GPU_BUSES)]:02x}:00.0"


def nic_address(index: int) -> str:
    """The PCI address of a node's `index`th NIC (`0000:17:00.0`, …)."""
    return f"0000:{NIC_BUSES[index % len(NIC_BUSES)]:02x}:00.0"


def checkpoints_avail(now: dt.datetime) -> int:
    """The shared checkpoint export's free bytes at `now`: between 34% and 46% of it,
    drifting over a 6-hour cycle as checkpoints are written and old ones pruned — one value
    for every node that mounts it."""
    hours = now.timestamp() / 3600
    share = 0.40 + 0.05 * math.sin(hours * 2 * math.pi / 6) + 0.01 * math.sin(hours * 2.7)
    return int(CHECKPOINTS.size_bytes * share)


# --- The live demo's host faults: one table, so a check that lands later can be judged
# against it (docs/simulator.md, Host readings).


@dataclass(frozen=True)
class HostFault:
    """A host fault the live demo raises now and then: its slug, the kind of reading it
    changes (apps/telemetry/host_kinds.py), the check meant to find it and what it should
    say (`warn` or `fail`, docs/checks.md), in words; `once`: a counter's growth, applied on
    the tick it is raised (else held on every tick until it ends); `devices`: how many of
    a node's subjects of its kind it may land on (a GPU's link: 8; a GPU's or NIC's: 16)."""

    slug: str
    kind: str
    check: str
    result: str
    words: str
    once: bool = False
    devices: int = 1

    def subject(self, index: int) -> str:
        """The subject the fault lands on, by its index (a Fault's `gpu`)."""
        if self.kind == "memory":
            return MEMORY_CONTROLLERS[index % len(MEMORY_CONTROLLERS)]
        if self.kind == "pcie":
            return gpu_address(index) if index < len(GPU_BUSES) else nic_address(index)
        if self.kind == "filesystem":
            return CHECKPOINTS.point
        if self.kind == "vmstat":
            return "kernel"
        return "system"


CE_BURST = (200, 400)  # correctable errors an EDAC burst adds: above `host_ce_per_hour`
CLOCK_DRIFT = 5e-5  # s/s a clock that lost sync drifts: 50 ppm, a free-running crystal
OOM_KILLS = (1, 3)  # processes an out-of-memory fault ends

HOST_FAULTS: tuple[HostFault, ...] = (
    HostFault(
        "edac_ce_burst",
        "memory",
        "host_memory",
        "warn",
        "an EDAC correctable burst: one memory controller's ce_total grows by 200–400",
        once=True,
        devices=len(MEMORY_CONTROLLERS),
    ),
    HostFault(
        "edac_ue",
        "memory",
        "host_memory",
        "fail",
        "an uncorrectable memory error: one memory controller's ue_total + 1",
        once=True,
        devices=len(MEMORY_CONTROLLERS),
    ),
    HostFault(
        "pcie_x8",
        "pcie",
        "pcie",
        "warn",
        f"a GPU's PCIe link trained down to x{TRAINED_DOWN_WIDTH} (of x{LANES})",
        devices=len(GPU_BUSES),
    ),
    HostFault(
        "aer_fatal",
        "pcie",
        "pcie",
        "fail",
        "an AER fatal error on a GPU's or a NIC's device: aer_fatal_total + 1",
        once=True,
        devices=len(GPU_BUSES) + len(NIC_BUSES),
    ),
    HostFault(
        "ckpt_readonly",
        "filesystem",
        "storage",
        "fail",
        f"{CHECKPOINTS.point} read-only on one node",
    ),
    HostFault(
        "clock_unsynced",
        "clock",
        "clock",
        "warn",
        f"the clock lost its sync (synced 0), drifting {CLOCK_DRIFT * 1e6:g} µs a second",
    ),
    HostFault(
        "oom_kill",
        "vmstat",
        "host_oom",
        "warn",
        f"the out-of-memory killer ends {OOM_KILLS[0]}–{OOM_KILLS[1]} processes",
        once=True,
    ),
)
HOST_FAULTS_BY_SLUG = {f.slug: f for f in HOST_FAULTS}


@dataclass(frozen=True)
class Placed:
    """A host fault where it lands: its table row, the node and the subject."""

    fault: HostFault
    hostname: str
    subject: str


# --- The readings.


def _node_rng(seed: int, hostname: str) -> random.Random:
    return random.Random(f"host/{seed}/{hostname}")


def node_first_readings(
    hostname: str, *, ts: dt.datetime, seed: int, gpus: int, nics: int = len(NIC_BUSES)
) -> list[HostReadingIn]:
    """A node's first host readings at `ts`, drawn from `seed` and its name alone (the same
    node of the same seed reads the same in any order): two memory controllers (most with
    no correctable error, a few with some, none uncorrectable), the three mounts, its GPUs'
    and NICs' PCIe devices at their full x16 Gen5 link with no AER error, its clock a few
    microseconds to a millisecond off and synced, and no out-of-memory kill."""
    rng = _node_rng(seed, hostname)
    out = []
    for mc in MEMORY_CONTROLLERS:
        ce = rng.randrange(1, 40) if rng.random() < 0.1 else 0
        out.append(_reading(hostname, "memory", mc, ts, {"ce_total": ce, "ue_total": 0}))
    for mount in MOUNTS:
        if mount.shared:
            avail = checkpoints_avail(ts)
        else:
            avail = int(mount.size_bytes * rng.uniform(0.35, 0.85))
        out.append(_reading(hostname, "filesystem", mount.point, ts, _fs(mount, avail, 0)))
    devices = [(gpu_address(i), "gpu") for i in range(min(gpus, len(GPU_BUSES)))]
    devices += [(nic_address(i), "nic") for i in range(min(nics, len(NIC_BUSES)))]
    for address, role in devices:
        out.append(_reading(hostname, "pcie", address, ts, _pcie(role, LANES, 0, 0, 0)))
    offset = math.copysign(10 ** rng.uniform(-5.7, -3.0), rng.random() - 0.5)
    out.append(_reading(hostname, "clock", "system", ts, {"offset_s": offset, "synced": 1}))
    out.append(_reading(hostname, "vmstat", "kernel", ts, {"oom_kill_total": 0}))
    return out


def host_readings(
    *,
    cluster: Cluster,
    now: dt.datetime,
    rng: random.Random,
    silent: Collection[str],
    held: Collection[Placed] = (),
    raised: Collection[Placed] = (),
) -> list[HostReadingIn]:
    """A new reading at `now` of every host subject of the cluster's nodes that report (not
    down, not silent), grown from its stored one (`next_readings`): one query, whatever the
    cluster's size."""
    stored = (
        HostReading.objects.filter(node__cluster=cluster)
        .exclude(node__state=NodeState.DOWN)
        .order_by("node__hostname", "kind", "subject")
        .values_list("node__hostname", "kind", "subject", "ts", "values")
    )
    rows = (row for row in stored.iterator(chunk_size=4000) if row[0] not in silent)
    return list(next_readings(rows, now=now, rng=rng, held=held, raised=raised))


def next_readings(
    stored: Iterable[tuple[str, str, str, dt.datetime | None, dict]],
    *,
    now: dt.datetime,
    rng: random.Random,
    held: Collection[Placed] = (),
    raised: Collection[Placed] = (),
) -> Iterator[HostReadingIn]:
    """A new reading at `now` of each stored one (hostname, kind, subject, ts, values),
    grown from it: counters now and then + 1 (far below the checks' rates), the mounts' free
    space drifting slowly, the clock's offset wandering within ±3 ms. `held`: the faults
    under way (a link at x8, a read-only mount, a clock out of sync); `raised`: the faults
    raised this tick, whose counters grow once."""
    on = {(p.hostname, p.fault.kind, p.subject): p.fault.slug for p in held}
    bumps = {(p.hostname, p.fault.kind, p.subject): p.fault.slug for p in raised}
    for hostname, kind, subject, ts, values in stored:
        if ts is not None and ts >= now:
            continue
        key = (hostname, kind, subject)
        grown = dict(values or {})
        if kind == "memory":
            if rng.random() < 0.002:
                grown["ce_total"] = grown.get("ce_total", 0) + 1
            if bumps.get(key) == "edac_ce_burst":
                grown["ce_total"] = grown.get("ce_total", 0) + rng.randint(*CE_BURST)
            elif bumps.get(key) == "edac_ue":
                grown["ue_total"] = grown.get("ue_total", 0) + 1
        elif kind == "filesystem":
            mount = _BY_POINT.get(subject)
            if mount is not None and mount.shared:
                grown["avail_bytes"] = checkpoints_avail(now)
            elif mount is not None:
                drift = int(mount.size_bytes * rng.gauss(0, 0.0005))
                avail = grown.get("avail_bytes", mount.size_bytes // 2) + drift
                grown["avail_bytes"] = min(max(avail, mount.size_bytes // 10), mount.size_bytes)
            grown["readonly"] = 1 if on.get(key) == "ckpt_readonly" else 0
        elif kind == "pcie":
            width = grown.get("max_link_width", LANES)
            grown["link_width"] = TRAINED_DOWN_WIDTH if on.get(key) == "pcie_x8" else width
            if rng.random() < 0.001:
                grown["aer_correctable_total"] = grown.get("aer_correctable_total", 0) + 1
            if bumps.get(key) == "aer_fatal":
                grown["aer_fatal_total"] = grown.get("aer_fatal_total", 0) + 1
        elif kind == "clock":
            offset = float(grown.get("offset_s", 0.0))
            if on.get(key) == "clock_unsynced":
                elapsed = (now - ts).total_seconds() if ts is not None else 15.0
                grown["offset_s"] = offset + math.copysign(CLOCK_DRIFT * elapsed, offset or 1)
                grown["synced"] = 0
            else:
                wandered = offset + rng.gauss(0, 2e-4)
                if abs(wandered) > 3e-3:  # back in step: the daemon slews it
                    wandered = rng.gauss(0, 5e-4)
                grown["offset_s"] = wandered
                grown["synced"] = 1
        elif kind == "vmstat" and bumps.get(key) == "oom_kill":
            grown["oom_kill_total"] = grown.get("oom_kill_total", 0) + rng.randint(*OOM_KILLS)
        yield _reading(hostname, kind, subject, now, grown)


def _fs(mount: Mount, avail: int, readonly: int) -> dict[str, int | float | str]:
    return {
        "device": mount.device,
        "fstype": mount.fstype,
        "readonly": readonly,
        "size_bytes": mount.size_bytes,
        "avail_bytes": avail,
        "device_error": 0,
    }


def _pcie(role: str, width: int, correctable: int, nonfatal: int, fatal: int) -> dict:
    return {
        "role": role,
        "link_width": width,
        "max_link_width": LANES,
        "link_speed_gts": GEN5_GTS,
        "max_link_speed_gts": GEN5_GTS,
        "aer_correctable_total": correctable,
        "aer_nonfatal_total": nonfatal,
        "aer_fatal_total": fatal,
    }


def _reading(
    hostname: str, kind: str, subject: str, ts: dt.datetime, values: dict
) -> HostReadingIn:
    return HostReadingIn(hostname, kind, subject, ts, values, Source.AGENT)
