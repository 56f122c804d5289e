"""Moore Threads GPUs through the node agent: MTML (`--mtml`), the `mthreads-gmi` table
(`--mthreads-gmi`) and the driver's lines in the kernel log (`--kmsg-mthreads`).

No Moore Threads GPU, driver or `libmtml.so` is on this machine. The MTML tests run Moore
Threads' real Python bindings (`pymtml`, mthreads-ml-py 2.4.3) with the C library's functions
replaced: `pymtml.mtmlLib` is a stand-in whose functions fill the bindings' ctypes out-values
as the MTML header (`mtml_2.2.0.h`, shipped with the bindings) says the C library does —
power in mW, memory in bytes. What is asserted is the canonical sample the agent sends.
The `mthreads-gmi` tests read the table output Moore Threads publish
(tests/agent/data/README.md names the pages).
"""

from __future__ import annotations

import ctypes
import datetime as dt
import json
import types
from pathlib import Path
from typing import Any

import pytest

from kuae_agent.cli import collect, parser
from kuae_agent.gmi import parse_gmi_table
from kuae_agent.kernellog import EVENTS_PATH, FileLog, XidFollower
from kuae_agent.mtdriver import parse_mthreads
from kuae_agent.mtml import MtmlReader, MtmlUnavailable
from kuae_agent.spool import Spool
from tests.binaries import module_or_skip

pymtml = module_or_skip("pymtml", install="make install (the dev lock's mthreads-ml-py)")

DATA = Path(__file__).parent / "data"
TS = dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.UTC)
BASE = 0x1000  # handles: BASE + the GPU's index


def _set(ref: Any, value: Any) -> int:
    """Write an out-value the way the C library does through the pointer it is given."""
    ref._obj.value = value
    return pymtml.MTML_SUCCESS


def _handle(ref: Any, index: int) -> int:
    """Make the opaque handle behind `ref` point at GPU `index`."""
    address = ctypes.c_void_p(BASE + index)
    ctypes.memmove(ctypes.addressof(ref._obj), ctypes.byref(address), ctypes.sizeof(address))
    return pymtml.MTML_SUCCESS


def _index(handle: Any) -> int:
    return int(ctypes.cast(handle, ctypes.c_void_p).value or 0) - BASE


def fake_libmtml(gpus: list[dict[str, Any]]) -> types.SimpleNamespace:
    """A stand-in for libmtml.so: each GPU a dict of what the C library would report; a key
    that is missing answers MTML_ERROR_NOT_SUPPORTED."""
    unsupported = pymtml.MTML_ERROR_NOT_SUPPORTED
    calls: list[str] = []

    def value(name: str) -> Any:
        def fn(handle: Any, ref: Any) -> int:
            gpu = gpus[_index(handle)]
            return _set(ref, gpu[name]) if name in gpu else unsupported

        return fn

    def init_by_index(_lib: Any, index: Any, ref: Any) -> int:
        return _handle(ref, index.value)

    def same_handle(device: Any, ref: Any) -> int:
        return _handle(ref, _index(device))

    def name(device: Any, buffer: Any, size: Any) -> int:
        buffer.value = gpus[_index(device)]["name"].encode()
        return pymtml.MTML_SUCCESS

    def uuid(device: Any, ref: Any, size: int) -> int:
        return _set(ref, gpus[_index(device)]["uuid"].encode())

    def pci(device: Any, ref: Any) -> int:
        ref._obj.sbdf = gpus[_index(device)]["sbdf"].encode()
        return pymtml.MTML_SUCCESS

    def ecc(memory: Any, error: Any, counter: Any, location: Any, ref: Any) -> int:
        assert location.value == pymtml.MTML_MEMORY_LOCATION_DRAM
        counts = gpus[_index(memory)].get("ecc")
        if counts is None:
            return unsupported
        return _set(ref, counts[(error.value, counter.value)])

    def retired(memory: Any, ref: Any) -> int:
        pages = gpus[_index(memory)].get("retired")
        if pages is None:
            return unsupported
        ref._obj.sbeCount, ref._obj.dbeCount = pages
        return pymtml.MTML_SUCCESS

    def link_spec(device: Any, ref: Any) -> int:
        links = gpus[_index(device)].get("links")
        if links is None:
            return unsupported
        ref._obj.linkNum = len(links)
        return pymtml.MTML_SUCCESS

    def link_state(device: Any, link: int, ref: Any) -> int:
        return _set(ref, gpus[_index(device)]["links"][link])

    def ok(*args: Any) -> int:
        calls.append("call")
        return pymtml.MTML_SUCCESS

    def count(_lib: Any, ref: Any) -> int:
        return _set(ref, len(gpus))

    def error_string(code: int) -> bytes:
        return b"Not Supported" if code == unsupported else b"Unknown Error"

    return types.SimpleNamespace(
        mtmlLibraryInit=ok,
        mtmlLibraryShutDown=ok,
        mtmlErrorString=error_string,
        mtmlLibraryCountDevice=count,
        mtmlLibraryInitDeviceByIndex=init_by_index,
        mtmlLibraryFreeDevice=ok,
        mtmlDeviceGetIndex=lambda device, ref: _set(ref, _index(device)),
        mtmlDeviceGetName=name,
        mtmlDeviceGetUUID=uuid,
        mtmlDeviceGetPciInfo=pci,
        mtmlDeviceGetPowerUsage=value("power_mw"),
        mtmlDeviceInitGpu=same_handle,
        mtmlDeviceFreeGpu=ok,
        mtmlGpuGetUtilization=value("util"),
        mtmlGpuGetTemperature=value("temp"),
        mtmlDeviceInitMemory=same_handle,
        mtmlDeviceFreeMemory=ok,
        mtmlMemoryGetUsed=value("used_bytes"),
        mtmlMemoryGetTotal=value("total_bytes"),
        mtmlMemoryGetEccErrorCounter=ecc,
        mtmlMemoryGetRetiredPagesCount=retired,
        mtmlMemoryGetRetiredPagesPendingStatus=value("pending"),
        mtmlDeviceGetMtLinkSpec=link_spec,
        mtmlDeviceGetMtLinkState=link_state,
        calls=calls,
    )


@pytest.fixture
def libmtml(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """Install a fake C library under the real bindings; returns a function that sets it."""

    def install(gpus: list[dict[str, Any]]) -> types.SimpleNamespace:
        lib = fake_libmtml(gpus)
        monkeypatch.setattr(pymtml, "mtmlLib", lib)
        monkeypatch.setattr(pymtml, "_mtmlGetFunctionPointer_cache", {})
        monkeypatch.setattr(pymtml, "_mtmlLib_handles", [])
        return lib

    return install


C, U = pymtml.MTML_MEMORY_ERROR_TYPE_CORRECTED, pymtml.MTML_MEMORY_ERROR_TYPE_UNCORRECTED
VOL, AGG = pymtml.MTML_VOLATILE_ECC, pymtml.MTML_AGGREGATE_ECC
UP, DOWN, DOWNGRADE = (
    pymtml.MTML_MTLINK_STATE_UP,
    pymtml.MTML_MTLINK_STATE_DOWN,
    pymtml.MTML_MTLINK_STATE_DOWNGRADE,
)

S4000 = {
    "name": "MTT S4000",
    "uuid": "bf1da7bf-0b4c-4f4b-9d6b-5a1f0c1d2e3f",
    "sbdf": "00000000:08:00.0",
    "power_mw": 245_500,
    "util": 97,
    "temp": 65,
    "used_bytes": 44302 * 1024 * 1024,
    "total_bytes": 49152 * 1024 * 1024,
    "ecc": {(C, VOL): 3, (U, VOL): 1, (C, AGG): 40, (U, AGG): 2},
    "retired": (5, 1),
    "pending": 1,
    "links": [UP, UP, DOWN, DOWNGRADE, UP, UP, UP],
}


def test_mtml_reads_each_gpu_as_canonical_names_with_units_converted(libmtml):
    plain = {k: v for k, v in S4000.items() if k not in ("ecc", "retired", "pending", "links")}
    lib = libmtml([S4000, {**plain, "power_mw": 80_000, "util": 0, "temp": 41}])
    reader = MtmlReader()
    samples = reader.read(node="mt-a01", ts=TS)
    assert samples[0] == {
        "node": "mt-a01",
        "gpu": 0,
        "ts": "2026-11-23T08:00:00Z",
        "vendor": "mthreads",
        "model": "MTT S4000",
        "uuid": "bf1da7bf-0b4c-4f4b-9d6b-5a1f0c1d2e3f",
        "pci_bus": "00000000:08:00.0",
        "metrics": {
            "power_w": 245.5,  # mW → W
            "gpu_util": 97,
            "temp_c": 65,
            "mem_used_mib": 44302.0,  # bytes → MiB
            "mem_total_mib": 49152.0,
            "ecc_sbe_total": 3,  # volatile: since the driver loaded
            "ecc_dbe_total": 1,
            "ecc_sbe_aggregate": 40,  # aggregate: the device's lifetime
            "ecc_dbe_aggregate": 2,
            "retired_pages_sbe": 5,
            "retired_pages_dbe": 1,
            "retired_pages_pending": 1,
            "links_total": 7,
            "links_down": 1,
            "links_degraded": 1,
        },
    }
    # A GPU without ECC or MTLink: those values are left out, never sent as 0.
    assert samples[1]["gpu"] == 1
    assert samples[1]["metrics"] == {
        "power_w": 80.0,
        "gpu_util": 0,
        "temp_c": 41,
        "mem_used_mib": 44302.0,
        "mem_total_mib": 49152.0,
    }
    started = len(lib.calls)
    assert reader.read(node="mt-a01", ts=TS)[0]["metrics"]["temp_c"] == 65
    assert len(lib.calls) - started == 2 * 3  # no second init: frees of device, GPU, memory
    reader.close()


def test_mtml_without_the_driver_library_says_what_is_missing(monkeypatch):
    monkeypatch.setattr(pymtml, "mtmlLib", None)
    monkeypatch.setattr(pymtml, "_mtmlGetFunctionPointer_cache", {})

    def no_library() -> None:
        raise OSError("libmtml.so.2: cannot open shared object file")

    monkeypatch.setattr(pymtml, "_LoadLinuxLibrary", no_library)
    with pytest.raises(MtmlUnavailable, match=r"libmtml\.so.*could not be loaded"):
        MtmlReader().read(node="n1", ts=TS)


def test_mtml_without_the_bindings_says_how_to_install_them(monkeypatch):
    import importlib

    real = importlib.import_module

    def without_pymtml(name: str, *args: Any) -> Any:
        if name == "pymtml":
            raise ModuleNotFoundError("No module named 'pymtml'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_pymtml)
    with pytest.raises(MtmlUnavailable, match=r"kuae-agent\[mtml\]"):
        MtmlReader().read(node="n1", ts=TS)


def test_collect_with_mtml_spools_the_samples(libmtml, tmp_path):
    libmtml([S4000])
    args = parser().parse_args(["once", "--node", "mt-a01", "--mtml"])
    spool = Spool(tmp_path / "spool")
    assert collect(args, spool)
    (item,) = spool.pending()
    assert item.path == "/api/v1/ingest/telemetry/"
    (sample,) = json.loads(item.body)["samples"]
    assert sample["vendor"] == "mthreads" and sample["metrics"]["power_w"] == 245.5


def test_collect_without_mtml_reports_the_failure_and_spools_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(pymtml, "mtmlLib", None)
    monkeypatch.setattr(pymtml, "_LoadLinuxLibrary", lambda: (_ for _ in ()).throw(OSError("x")))
    args = parser().parse_args(["once", "--node", "mt-a01", "--mtml"])
    spool = Spool(tmp_path / "spool")
    assert not collect(args, spool)
    assert spool.pending() == []


def test_the_gpu_source_flags_exclude_each_other():
    with pytest.raises(SystemExit):
        parser().parse_args(["once", "--mtml", "--mthreads-gmi"])


def test_mthreads_gmi_table_as_published_one_gpu():
    (sample,) = parse_gmi_table((DATA / "mthreads_gmi_faq.txt").read_text(), node="n1", ts=TS)
    assert sample == {
        "node": "n1",
        "gpu": 0,
        "ts": "2026-11-23T08:00:00Z",
        "vendor": "mthreads",
        "model": "MTT S4000",
        "pci_bus": "00000000:08:00.0",
        "metrics": {
            "gpu_util": 88.0,
            "mem_used_mib": 44302.0,  # the table's "used(total)"
            "mem_total_mib": 32768.0,
            "temp_c": 65.0,
        },
    }


def test_mthreads_gmi_table_as_published_eight_gpus():
    samples = parse_gmi_table((DATA / "mthreads_gmi_8gpu.txt").read_text(), node="n1", ts=TS)
    assert [s["gpu"] for s in samples] == list(range(8))
    assert [s["metrics"]["temp_c"] for s in samples] == [41, 42, 40, 40, 41, 40, 40, 43]
    assert [s["metrics"]["mem_used_mib"] for s in samples] == [4, 6, 4, 4, 5, 4, 4, 4]
    assert {s["metrics"]["mem_total_mib"] for s in samples} == {49152}
    assert samples[2]["pci_bus"] == "00000000:0e:00.0"
    assert {s["model"] for s in samples} == {"MTT S4000"}


def test_mthreads_gmi_cells_not_in_the_published_shape_are_left_out():
    text = (DATA / "mthreads_gmi_faq.txt").read_text()
    text = text.replace("|88%", "|N/A").replace("|65C", "|N/A")
    (sample,) = parse_gmi_table(text, node="n1", ts=TS)
    assert sample["metrics"] == {"mem_used_mib": 44302.0, "mem_total_mib": 32768.0}


def test_collect_runs_mthreads_gmi(tmp_path):
    binary = tmp_path / "mthreads-gmi"
    binary.write_text(f"#!/bin/sh\ncat {DATA / 'mthreads_gmi_8gpu.txt'}\n")
    binary.chmod(0o755)
    args = ["once", "--node", "n1", "--mthreads-gmi", "--gmi-binary", str(binary)]
    spool = Spool(tmp_path / "spool")
    assert collect(parser().parse_args(args), spool)
    assert len(json.loads(spool.pending()[0].body)["samples"]) == 8


@pytest.mark.parametrize(
    ("line", "level", "bus"),
    [
        ("MTGPU:  550: ------------[ MTGPU DBG: END ]------------", 4, ""),
        ("mtgpu 0000:3b:00.0: something the driver said", 3, "0000:3b:00.0"),
        ("WARNING: CPU: 25 PID: 550 at src/pvr/osfunc.c:1191 OSWarnOn+0xf/0x20 [mtgpu]", 4, ""),
        ("MTGPU: a line of a plain dmesg file, level unknown", None, ""),
    ],
)
def test_moore_threads_driver_lines(line, level, bus):  # noqa: ANN001
    assert parse_mthreads(line, level) == (bus, line)


@pytest.mark.parametrize(
    ("line", "level"),
    [
        ("MTGPU: an informational line", 6),  # below warning
        (" OSWarnOn+0xf/0x20 [mtgpu]", 4),  # a stack line of a warning already sent
        ("Modules linked in: mtgpu(OE) nvme", 4),
        ("NVRM: Xid (PCI:0000:17:00): 79, GPU has fallen off the bus.", 3),
    ],
)
def test_other_lines_are_not_moore_threads_faults(line, level):  # noqa: ANN001
    assert parse_mthreads(line, level) is None


def test_the_follower_sends_driver_lines_apart_from_xids_only_when_asked(tmp_path):
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    usec = 0
    log = tmp_path / "kmsg.txt"
    lines = [
        "3,1,{u},-;NVRM: Xid (PCI:0000:17:00): 79, GPU has fallen off the bus.",
        "3,2,{u},-;mtgpu 0000:3b:00.0: GPU fault (1: Guilty Lockup) detected when processing kick",
        "6,3,{u},-;MTGPU: loaded",
    ]
    log.write_text("".join(line.format(u=usec) + "\n" for line in lines))

    def poll(spool: Spool, mthreads: bool) -> list[list[dict[str, Any]]]:
        follower = XidFollower(
            FileLog(log), node="mt-a01", spool=spool, cursor_file=spool.root / "cursor",
            backfill_s=float("inf"), mthreads=mthreads,
        )  # fmt: skip
        follower.poll(now)
        assert {item.path for item in spool.pending()} <= {EVENTS_PATH}
        return [json.loads(item.body)["events"] for item in spool.pending()]

    assert [[e["kind"] for e in r] for r in poll(Spool(tmp_path / "a"), False)] == [["xid"]]
    xids, vendor = poll(Spool(tmp_path / "b"), True)
    assert [e["kind"] for e in xids] == ["xid"]
    (event,) = vendor  # its own request: a server that refuses the kind keeps the XIDs
    assert event["kind"] == "mthreads_driver" and "code" not in event
    assert event["pci_bus"] == "0000:3b:00.0"
    assert event["message"].endswith("GPU fault (1: Guilty Lockup) detected when processing kick")
