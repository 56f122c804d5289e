"""`kuae-agent --host` (docs/agent.md, Host readings): memory controllers, PCIe links, mounts
and the clock read from fake sysfs and procfs trees laid out as the kernel lays them out, the
adjtimex wrapper against glibc's own `struct timex`, and the batch `once` and `run` post to a
real HTTP server in-process (tests/agent/recorder.py)."""

from __future__ import annotations

import datetime as dt
import errno
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kuae_agent
from kuae_agent import config
from kuae_agent.cli import main
from kuae_agent.host import HostReader, aer_total, parse_mounts, pci_role
from kuae_agent.timex import (
    STA_NANO,
    STA_UNSYNC,
    TIME_ERROR,
    ClockReading,
    ClockUnavailable,
    Timex,
    read_clock,
    reading,
)
from tests.agent.recorder import Recorder

TS = dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.UTC)
STAMP = "2026-11-23T08:00:00Z"
NODE = "gpu-a017"
GIB = 2**30


def _write(folder: Path, files: dict[str, object]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        (folder / name).write_text(f"{value}\n")


def _aer(total_label: str, total: int) -> str:
    """An AER file as the kernel prints it: one line per error type, then the total."""
    return f"RxErr 0\nBadTLP {total}\nBadDLLP 0\n{total_label} {total}"


def _pci(sysfs: Path, address: str, files: dict[str, object]) -> Path:
    """A PCI device folder under devices/pci0000:00/, linked from bus/pci/devices/ as the
    kernel links it."""
    real = sysfs / "devices" / "pci0000:00" / address
    _write(real, files)
    link = sysfs / "bus" / "pci" / "devices" / address
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(real)
    return real


MOUNTS = """\
sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
/dev/nvme0n1p2 / ext4 rw,relatime,errors=remount-ro 0 0
tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0
tmpfs /run tmpfs rw,nosuid,nodev,size=52428800k,mode=755 0 0
cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0
nfs-a:/export/ckpt /checkpoints nfs4 rw,relatime,vers=4.2,rsize=1048576 0 0
/dev/md0 /data xfs ro,relatime,attr2,inode64 0 0
overlay /var/lib/docker/overlay2/3f1c/merged overlay rw,relatime,lowerdir=/x 0 0
/dev/sdb1 /mnt/old\\040logs ext4 rw,relatime 0 0
10.0.0.5@o2ib:/lfs /scratch lustre rw,flock,lazystatfs 0 0
/dev/loop3 /snap/core/17200 squashfs ro,nodev,relatime 0 0
tmpfs /ramdisk tmpfs rw,size=1g 0 0
"""


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(sysfs, procfs, rootfs) of a node: two EDAC controllers, a GPU at x16, a GPU trained
    down to x8 with an AER fatal error, an InfiniBand NIC whose speed reads Unknown, a NIC's
    virtual function, a USB controller, the BMC's VGA console; and its mounts."""
    sysfs, procfs, rootfs = tmp_path / "sys", tmp_path / "proc", tmp_path / "root"
    edac = sysfs / "devices" / "system" / "edac" / "mc"
    _write(edac / "mc0", {"ce_count": 3, "ue_count": 0, "mc_name": "Skylake Socket#0 IMC#0"})
    _write(edac / "mc1", {"ce_count": 120, "ue_count": 1})
    _write(edac / "mc10", {"ce_count": 0, "ue_count": "N/A"})  # not a count: left out
    (edac / "power").mkdir()
    link = {"current_link_speed": "32.0 GT/s PCIe", "max_link_speed": "32.0 GT/s PCIe"}
    _pci(
        sysfs,
        "0000:17:00.0",
        {"class": "0x030200", "vendor": "0x10de", "current_link_width": 16}
        | {"max_link_width": 16, "aer_dev_correctable": _aer("TOTAL_ERR_COR", 2)}
        | {"aer_dev_nonfatal": _aer("TOTAL_ERR_NONFATAL", 0)}
        | {"aer_dev_fatal": _aer("TOTAL_ERR_FATAL", 0)}
        | link,
    )
    _pci(
        sysfs,
        "0000:3d:00.0",
        {"class": "0x030200", "vendor": "0x10de", "current_link_width": 8, "max_link_width": 16}
        | {"current_link_speed": "16.0 GT/s PCIe", "max_link_speed": "32.0 GT/s PCIe"}
        | {"aer_dev_correctable": _aer("TOTAL_ERR_COR", 0)}
        | {"aer_dev_nonfatal": _aer("TOTAL_ERR_NONFATAL", 4)}
        | {"aer_dev_fatal": _aer("TOTAL_ERR_FATAL", 1)},
    )
    nic = {"class": "0x020700", "vendor": "0x15b3", "current_link_width": 16}
    nic |= {"max_link_width": 16, "current_link_speed": "Unknown", "max_link_speed": "16 GT/s"}
    _pci(sysfs, "0000:18:00.0", nic)  # no AER files: no AER values
    vf = _pci(sysfs, "0000:18:00.1", nic)
    (vf / "physfn").symlink_to(sysfs / "devices" / "pci0000:00" / "0000:18:00.0")
    _pci(sysfs, "0000:00:14.0", {"class": "0x0c0330", "vendor": "0x8086"} | link)
    _pci(sysfs, "0000:02:00.0", {"class": "0x030000", "vendor": "0x1a03"} | link)
    _write(procfs / "self", {"mounts": MOUNTS})
    (procfs / "vmstat").write_text("nr_free_pages 81234\npgfault 99\noom_kill 2\nthp_split 0\n")
    for point in ("checkpoints", "data", "scratch", "mnt/old logs"):
        (rootfs / point).mkdir(parents=True)
    return sysfs, procfs, rootfs


def _vfs(blocks: int, bavail: int, frsize: int = 4096) -> os.statvfs_result:
    return os.statvfs_result((frsize, frsize, blocks, bavail + 10, bavail, 0, 0, 0, 0, 255))


def _fake_statvfs(rootfs: Path) -> Any:
    """A statvfs that knows the fake mounts (by their path under `rootfs`); /scratch's
    server answers EIO."""
    sizes = {
        "": _vfs(GIB // 4096 * 100, GIB // 4096 * 40),
        "checkpoints": _vfs(GIB // 4096 * 1000, GIB // 4096 * 30),
        "data": _vfs(GIB // 4096 * 8, GIB // 4096 * 8),
        "mnt/old logs": _vfs(GIB // 4096 * 2, 0),
    }

    def statvfs(path: str) -> os.statvfs_result:
        key = os.path.relpath(path, rootfs).removeprefix(".")
        if key == "scratch":
            raise OSError(errno.EIO, "Input/output error", path)
        return sizes[key]

    return statvfs


def _clock() -> ClockReading:
    return ClockReading(offset_s=0.000125, synced=True)


def _reader(trees: tuple[Path, Path, Path], **options: Any) -> HostReader:
    sysfs, procfs, rootfs = trees
    options = {"statvfs": _fake_statvfs(rootfs), "clock": _clock} | options
    return HostReader(sysfs=sysfs, procfs=procfs, rootfs=rootfs, **options)


def _item(kind: str, subject: str, values: dict[str, object]) -> dict[str, object]:
    return {"node": NODE, "kind": kind, "subject": subject, "ts": STAMP, "values": values}


def _fs(device: str, fstype: str, readonly: int, size: int, avail: int) -> dict[str, object]:
    sizes = {"size_bytes": size * GIB, "avail_bytes": avail * GIB, "device_error": 0}
    return {"device": device, "fstype": fstype, "readonly": readonly} | sizes


def test_reads_the_host_as_the_server_takes_it(trees):
    reader = _reader(trees, mounts=["/scratch", "/checkpoints/", "/missing"])
    assert reader.read(node=NODE, ts=TS) == [
        _item("memory", "mc0", {"ce_total": 3, "ue_total": 0}),
        _item("memory", "mc1", {"ce_total": 120, "ue_total": 1}),
        _item("memory", "mc10", {"ce_total": 0}),
        _item(
            "pcie",
            "0000:17:00.0",
            {"role": "gpu", "link_width": 16, "max_link_width": 16}
            | {"link_speed_gts": 32.0, "max_link_speed_gts": 32.0}
            | {"aer_correctable_total": 2, "aer_nonfatal_total": 0, "aer_fatal_total": 0},
        ),
        _item(
            "pcie",
            "0000:18:00.0",
            {"role": "nic", "link_width": 16, "max_link_width": 16, "max_link_speed_gts": 16.0},
        ),
        _item(
            "pcie",
            "0000:3d:00.0",
            {"role": "gpu", "link_width": 8, "max_link_width": 16}
            | {"link_speed_gts": 16.0, "max_link_speed_gts": 32.0}
            | {"aer_correctable_total": 0, "aer_nonfatal_total": 4, "aer_fatal_total": 1},
        ),
        # the required mounts first, as given; /missing is not mounted: not sent
        _item(
            "filesystem",
            "/scratch",
            {"device": "10.0.0.5@o2ib:/lfs", "fstype": "lustre", "readonly": 0, "device_error": 1},
        ),
        _item("filesystem", "/checkpoints", _fs("nfs-a:/export/ckpt", "nfs4", 0, 1000, 30)),
        # then every other real filesystem by mount point
        _item("filesystem", "/", _fs("/dev/nvme0n1p2", "ext4", 0, 100, 40)),
        _item("filesystem", "/data", _fs("/dev/md0", "xfs", 1, 8, 8)),
        _item("filesystem", "/mnt/old logs", _fs("/dev/sdb1", "ext4", 0, 2, 0)),
        _item("clock", "system", {"offset_s": 0.000125, "synced": 1}),
        _item("vmstat", "kernel", {"oom_kill_total": 2}),
    ]


def test_sizes_are_read_by_statvfs_under_the_rootfs(tmp_path):
    """The real os.statvfs of ROOTFS/<mount point>, in bytes of the fragment size."""
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "mounts").write_text("/dev/sdc1 /ckpt ext4 rw 0 0\n")
    (tmp_path / "root" / "ckpt").mkdir(parents=True)
    reader = HostReader(
        sysfs=tmp_path / "sys", procfs=tmp_path / "proc", rootfs=tmp_path / "root", clock=_clock
    )
    [item] = [i for i in reader.read(node=NODE, ts=TS) if i["kind"] == "filesystem"]
    real = os.statvfs(tmp_path / "root" / "ckpt")
    values = item["values"]
    assert item["subject"] == "/ckpt" and values["device_error"] == 0
    assert values["size_bytes"] == real.f_blocks * real.f_frsize > 0
    assert 0 <= values["avail_bytes"] <= values["size_bytes"]


def test_a_statvfs_that_hangs_is_a_device_error_and_is_not_asked_again(tmp_path, caplog):
    """A hung NFS server never returns from statvfs: the round goes on without it, and the
    mount is not asked again until its call returns."""
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "mounts").write_text("srv:/ckpt /checkpoints nfs4 rw 0 0\n")
    release = threading.Event()
    calls: list[str] = []

    def statvfs(path: str) -> os.statvfs_result:
        calls.append(path)
        release.wait(10)
        return _vfs(100, 50)

    reader = HostReader(
        sysfs=tmp_path,
        procfs=tmp_path / "proc",
        rootfs=Path("/"),
        statvfs=statvfs,
        clock=_clock,
        stat_timeout_s=0.2,
    )
    hung = {"device": "srv:/ckpt", "fstype": "nfs4", "readonly": 0, "device_error": 1}
    with caplog.at_level(logging.WARNING, logger="kuae_agent"):
        for _ in range(2):
            assert reader.filesystems() == [("/checkpoints", hung)]
    assert calls == ["/checkpoints"]
    assert [r.getMessage() for r in caplog.records if "statvfs" in r.getMessage()] == [
        "host: statvfs(/checkpoints) did not return in 0.2 s"
    ]
    release.set()
    reader._stuck["/checkpoints"].join(5)
    sizes = {"size_bytes": 409600, "avail_bytes": 204800, "device_error": 0}
    assert reader.filesystems() == [("/checkpoints", hung | sizes)]
    assert calls == ["/checkpoints", "/checkpoints"]


def test_a_node_without_edac_mounts_clock_or_vmstat_sends_nothing_says_so_once(tmp_path, caplog):
    def no_clock() -> ClockReading:
        raise ClockUnavailable("adjtimex failed (errno 1)")

    reader = HostReader(sysfs=tmp_path / "sys", procfs=tmp_path / "proc", clock=no_clock)
    with caplog.at_level(logging.WARNING, logger="kuae_agent"):
        assert reader.read(node=NODE, ts=TS) == []
        assert reader.read(node=NODE, ts=TS) == []
    edac = tmp_path / "sys" / "devices" / "system" / "edac" / "mc"
    assert [r.getMessage() for r in caplog.records] == [
        f"host: no EDAC memory controllers under {edac}; none sent",
        f"host: cannot read {tmp_path / 'proc' / 'self' / 'mounts'}; no filesystems sent",
        "host: adjtimex failed (errno 1); no clock reading",
        f"host: no oom_kill in {tmp_path / 'proc' / 'vmstat'}; none sent",
    ]


def test_a_required_mount_on_a_pseudo_filesystem_is_said_not_sent(trees, caplog):
    reader = _reader(trees, mounts=["/ramdisk", "/dev/shm"])
    with caplog.at_level(logging.WARNING, logger="kuae_agent"):
        points = [subject for subject, _ in reader.filesystems()]
    assert points == ["/", "/checkpoints", "/data", "/mnt/old logs", "/scratch"]
    assert [r.getMessage() for r in caplog.records if "required mount" in r.getMessage()] == [
        "host: required mount /ramdisk is a tmpfs, which is not stored; not sent",
        "host: required mount /dev/shm is a tmpfs, which is not stored; not sent",
    ]


def test_a_mount_point_mounted_over_is_the_later_line():
    text = "/dev/sda1 /data ext4 rw 0 0\nsrv:/d /data/ nfs ro,noatime 0 0\nbad line\n"
    assert parse_mounts(text) == {"/data": ("srv:/d", "nfs", 1)}


@pytest.mark.parametrize(
    ("klass", "vendor", "role"),
    [
        ("0x030200", "0x10de", "gpu"),  # 3D controller
        ("0x030000", "0x1002", "gpu"),  # VGA-compatible
        ("0x030000", "0x102b", None),  # a Matrox BMC console
        ("0x020000", "0x8086", "nic"),  # Ethernet
        ("0x020700", "0x15b3", "nic"),  # InfiniBand
        ("0x060400", "0x1000", None),  # a PCIe switch's bridge
        ("0x068000", "0x10de", None),  # an NVSwitch
        ("garbage", "0x10de", None),
        (None, None, None),
    ],
)
def test_the_role_of_a_pci_class(klass, vendor, role):
    assert pci_role(klass, vendor) == role


def test_an_aer_total_is_its_own_line_only():
    text = "RxErr 7\nTOTAL_ERR_CORX 9\nTOTAL_ERR_COR 12\n"
    assert aer_total(text, "TOTAL_ERR_COR") == 12
    assert aer_total("TOTAL_ERR_FATAL x\n", "TOTAL_ERR_FATAL") is None
    assert aer_total(None, "TOTAL_ERR_FATAL") is None


def test_required_mounts_from_the_environment():
    assert config.mounts({"KUAE_MOUNTS": " /checkpoints, /scratch ,,"}) == [
        "/checkpoints",
        "/scratch",
    ]
    assert config.mounts({}) == []


# adjtimex


@pytest.mark.parametrize(
    ("state", "offset", "status", "expected"),
    [
        (0, 1500, 0, ClockReading(0.0015, True)),  # microseconds
        (0, -2_500_000, STA_NANO, ClockReading(-0.0025, True)),  # nanoseconds
        (0, 0, STA_UNSYNC, ClockReading(0.0, False)),
        (TIME_ERROR, 0, 0, ClockReading(0.0, False)),
        (1, 700_000, 0x0001, ClockReading(0.7, True)),  # TIME_INS, STA_PLL
    ],
)
def test_an_adjtimex_answer_as_a_reading(state, offset, status, expected):
    got = reading(state, offset, status)
    assert got.synced == expected.synced and got.offset_s == pytest.approx(expected.offset_s)


_PROGRAM = r"""
#include <stddef.h>
#include <stdio.h>
#include <sys/timex.h>
int main(void) {
    struct timex t = {0};
    int state = adjtimex(&t);
    printf("%zu %zu %zu %d %d\n", sizeof t, offsetof(struct timex, offset),
           offsetof(struct timex, status), state, t.status);
    return 0;
}
"""


@pytest.fixture(scope="module")
def glibc_timex(tmp_path_factory) -> Iterator[list[int]]:
    """What a C program compiled against this machine's glibc says: sizeof(struct timex),
    the offsets of `offset` and `status`, adjtimex's answer and `status`."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to read glibc's struct timex with")
    folder = tmp_path_factory.mktemp("timex")
    (folder / "t.c").write_text(_PROGRAM)
    subprocess.run([cc, "-o", str(folder / "t"), str(folder / "t.c")], check=True)
    out = subprocess.run([str(folder / "t")], check=True, capture_output=True, text=True)
    yield [int(n) for n in out.stdout.split()]


def test_the_struct_is_laid_out_as_glibc_lays_it_out(glibc_timex):
    import ctypes

    size, offset_at, status_at, _, _ = glibc_timex
    assert (ctypes.sizeof(Timex), Timex.offset.offset, Timex.status.offset) == (
        size,
        offset_at,
        status_at,
    )
    assert (size, offset_at, status_at) == (208, 8, 40)  # 64-bit Linux


def test_the_clock_reads_as_glibc_reads_it(glibc_timex):
    *_, state, status = glibc_timex
    clock = read_clock()
    assert clock.synced == (state != TIME_ERROR and not status & STA_UNSYNC)
    assert abs(clock.offset_s) < 3600


# the agent's command line


def _node_tree(trees: tuple[Path, Path, Path]) -> None:
    """An InfiniBand port beside the host's trees, for --fabric."""
    sysfs = trees[0]
    port = sysfs / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    _write(port, {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "400 Gb/sec"})


@pytest.fixture
def recorder(monkeypatch) -> Iterator[Recorder]:  # noqa: ANN001
    monkeypatch.setenv("KUAE_TOKEN", "agent-token")
    server = Recorder()
    yield server
    server.close()


def _host_options(trees: tuple[Path, Path, Path]) -> list[str]:
    sysfs, procfs, rootfs = trees
    roots = ["--sysfs", str(sysfs), "--procfs", str(procfs), "--rootfs", str(rootfs)]
    return ["--host", *roots, "--mount", "/checkpoints", "--mount", "/lost"]


def _expected_host(trees: tuple[Path, Path, Path], clock: ClockReading) -> list[dict[str, Any]]:
    """What --host sends from `trees` with the real statvfs (whose free space the test cannot
    know: the caller compares `avail_bytes` apart) and this `clock`."""
    reader = _reader(trees, mounts=["/checkpoints"], statvfs=os.statvfs, clock=lambda: clock)
    return reader.read(node=NODE, ts=TS)


def _without_stamps_and_free_space(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for item in items:
        values = dict(item["values"])
        values.pop("avail_bytes", None)
        if item["kind"] == "clock":
            values.pop("offset_s")
        out.append({**item, "ts": None, "values": values})
    return out


def test_once_posts_the_host_with_the_ports_in_one_batch(recorder, exporter, trees, tmp_path):
    _node_tree(trees)
    args = ["once", "--server", recorder.url, "--node", NODE, "--exporter", f"{exporter}/metrics"]
    args += ["--spool", str(tmp_path / "spool"), "--fabric", *_host_options(trees)]
    assert main(args) == 0

    [batch] = recorder.posted("/api/v1/ingest/telemetry/")
    assert sorted(batch) == ["host", "ports"]
    assert [(p["device"], p["port"], p["metrics"]["state"]) for p in batch["ports"]] == [
        ("mlx5_0", 1, "ACTIVE")
    ]
    host = batch["host"]
    stamps = {item["ts"] for item in host} | {port["ts"] for port in batch["ports"]}
    assert len(stamps) == 1  # one round, one time
    expected = _expected_host(trees, read_clock())
    assert _without_stamps_and_free_space(host) == _without_stamps_and_free_space(expected)
    assert [i["subject"] for i in host if i["kind"] == "filesystem"][:2] == ["/checkpoints", "/"]
    for item in host:
        if item["kind"] == "filesystem" and not item["values"]["device_error"]:
            assert 0 <= item["values"]["avail_bytes"] <= item["values"]["size_bytes"]
    [clock] = [i["values"] for i in host if i["kind"] == "clock"]
    assert isinstance(clock["offset_s"], float) and clock["synced"] in (0, 1)
    # the GPUs' readings went as before, to the Prometheus intake
    [metrics] = recorder.posted("/api/v1/ingest/prometheus/")
    assert "DCGM_FI_DEV_SM_CLOCK" in metrics


def test_once_without_host_sends_no_host(recorder, exporter, trees, tmp_path):
    _node_tree(trees)
    args = ["once", "--server", recorder.url, "--node", NODE, "--exporter", f"{exporter}/metrics"]
    args += ["--spool", str(tmp_path / "spool"), "--fabric", "--sysfs", str(trees[0])]
    assert main(args) == 0
    [batch] = recorder.posted("/api/v1/ingest/telemetry/")
    assert sorted(batch) == ["ports"]


def test_run_sends_the_host_every_round(recorder, exporter, trees, tmp_path):
    """`kuae-agent run --host` as a service runs it: a process of its own, until SIGTERM."""
    agent_dir = Path(kuae_agent.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(agent_dir), "KUAE_TOKEN": "agent-token"}
    command = [sys.executable, "-m", "kuae_agent.cli", "run", "--server", recorder.url]
    command += ["--node", NODE, "--interval", "0.2", "--exporter", f"{exporter}/metrics"]
    command += ["--spool", str(tmp_path / "spool"), *_host_options(trees)]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(recorder.posted("/ingest/telemetry/")) < 2:
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    first, second = recorder.posted("/ingest/telemetry/")[:2]
    assert sorted(first) == sorted(second) == ["host"]  # no --fabric: the host alone
    assert first["host"][0]["ts"] < second["host"][0]["ts"]
    subjects = [(i["kind"], i["subject"]) for i in second["host"]]
    assert subjects[:6] == [
        ("memory", "mc0"),
        ("memory", "mc1"),
        ("memory", "mc10"),
        ("pcie", "0000:17:00.0"),
        ("pcie", "0000:18:00.0"),
        ("pcie", "0000:3d:00.0"),
    ]
    assert ("filesystem", "/checkpoints") in subjects and ("filesystem", "/lost") not in subjects
    assert err.count("no EDAC") == 0 and err.count("ERROR") == 0, err
