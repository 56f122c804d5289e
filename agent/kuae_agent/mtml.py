"""Moore Threads GPUs through MTML, the driver's management library (`--mtml`).

Read through Moore Threads' Python bindings, `mthreads-ml-py` (module `pymtml`, the
`kuae-agent[mtml]` extra), as their published API describes them (the bindings' README and
the MTML header they ship, `mtml_2.2.0.h`): power in milliwatts, memory in bytes,
temperature in °C, utilisation in %. Each becomes a canonical name with its unit converted
(docs/agent.md, "Moore Threads GPUs"). A value the device does not support
(`MTML_ERROR_NOT_SUPPORTED`, or any other MTML error for that one call) is left out of the
sample, never sent as 0.

`pymtml` is imported only when `--mtml` is asked for; without it, or without the driver's
`libmtml.so`, the reader fails with a message saying which is missing.
"""

from __future__ import annotations

import datetime as dt
import importlib
import logging
from collections.abc import Callable
from functools import partial
from types import ModuleType
from typing import Any

log = logging.getLogger("kuae_agent")

VENDOR = "mthreads"
MIB = 1024 * 1024


class MtmlUnavailable(RuntimeError):
    """MTML cannot be used on this node: the bindings or the driver's library are missing,
    or the library would not start. The message says which."""


def load_bindings() -> ModuleType:
    """The `pymtml` module; MtmlUnavailable when `mthreads-ml-py` is not installed."""
    try:
        return importlib.import_module("pymtml")
    except ImportError as exc:
        raise MtmlUnavailable(
            "--mtml needs Moore Threads' MTML bindings: pip install 'kuae-agent[mtml]' "
            f"(mthreads-ml-py) ({exc})"
        ) from exc


class MtmlReader:
    """Reads every Moore Threads GPU of the node through MTML. The library is started on the
    first read and kept for the next ones (`close()` shuts it down); after an error it is
    started again on the next read."""

    def __init__(self, bindings: ModuleType | None = None) -> None:
        self._bindings = bindings
        self._started = False

    def _lib(self) -> ModuleType:
        if self._bindings is None:
            self._bindings = load_bindings()
        lib = self._bindings
        if not self._started:
            try:
                lib.mtmlLibraryInit()
            except OSError as exc:  # the bindings could not load libmtml.so
                raise MtmlUnavailable(
                    f"--mtml: the Moore Threads driver's MTML library (libmtml.so) could not "
                    f"be loaded: {exc}"
                ) from exc
            except lib.MTMLError as exc:
                raise MtmlUnavailable(f"--mtml: MTML would not start: {exc}") from exc
            self._started = True
        return lib

    def read(self, *, node: str, ts: dt.datetime) -> list[dict[str, Any]]:
        """One telemetry sample per GPU MTML reports (`vendor`, `model`, `uuid` and `pci_bus`
        where known). MtmlUnavailable when the library cannot be used."""
        lib = self._lib()
        try:
            count = lib.mtmlLibraryCountDevice()
        except lib.MTMLError as exc:
            self._started = False
            raise MtmlUnavailable(f"--mtml: MTML could not count the GPUs: {exc}") from exc
        when = ts.isoformat().replace("+00:00", "Z")
        samples = []
        for position in range(count):
            try:
                device = lib.mtmlLibraryInitDeviceByIndex(position)
            except lib.MTMLError as exc:
                log.warning("MTML: GPU %d could not be opened: %s", position, exc)
                continue
            try:
                sample = read_device(lib, device, position, node=node, ts=when)
            finally:
                _quietly(lib, partial(lib.mtmlLibraryFreeDevice, device))
            if sample is not None:
                samples.append(sample)
        return samples

    def close(self) -> None:
        """Shut MTML down (the next read starts it again)."""
        if self._started and self._bindings is not None:
            lib = self._bindings
            _quietly(lib, lib.mtmlLibraryShutDown)
        self._started = False


def _quietly(lib: ModuleType, call: Callable[[], Any]) -> Any:
    """`call()`, or None when MTML refuses it (not supported, not permitted, …)."""
    try:
        return call()
    except lib.MTMLError:
        return None


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value or "").strip("\x00").strip()


def read_device(
    lib: ModuleType, device: Any, position: int, *, node: str, ts: str
) -> dict[str, Any] | None:
    """One GPU's sample; None when MTML reports none of its values."""
    metrics: dict[str, float] = {}

    def put(name: str, value: Any, scale: float = 1.0) -> None:
        if value is not None:
            metrics[name] = value * scale if scale != 1.0 else value

    put("power_w", _quietly(lib, lambda: lib.mtmlDeviceGetPowerUsage(device)), 1 / 1000)
    with lib.mtmlGpuContext(device) as gpu:
        put("gpu_util", _quietly(lib, lambda: lib.mtmlGpuGetUtilization(gpu)))
        put("temp_c", _quietly(lib, lambda: lib.mtmlGpuGetTemperature(gpu)))
    with lib.mtmlMemoryContext(device) as memory:
        put("mem_used_mib", _quietly(lib, lambda: lib.mtmlMemoryGetUsed(memory)), 1 / MIB)
        put("mem_total_mib", _quietly(lib, lambda: lib.mtmlMemoryGetTotal(memory)), 1 / MIB)
        metrics.update(_ecc(lib, memory))
    metrics.update(_mtlinks(lib, device))
    if not metrics:
        return None
    index = _quietly(lib, lambda: lib.mtmlDeviceGetIndex(device))
    sample: dict[str, Any] = {
        "node": node,
        "gpu": index if isinstance(index, int) and index >= 0 else position,
        "ts": ts,
        "metrics": metrics,
        "vendor": VENDOR,
    }
    model = _text(_quietly(lib, lambda: lib.mtmlDeviceGetName(device)))
    uuid = _text(_quietly(lib, lambda: lib.mtmlDeviceGetUUID(device)))
    pci = _quietly(lib, lambda: lib.mtmlDeviceGetPciInfo(device))
    bus = _text(getattr(pci, "sbdf", b"")) if pci is not None else ""
    if model:
        sample["model"] = model
    if uuid:
        sample["uuid"] = uuid
    if bus.count(":") == 2:
        sample["pci_bus"] = bus
    return sample


# (canonical name, error type, counter type): DRAM ECC counts. Corrected errors are
# single-bit, uncorrected double-bit (the header's MtmlMemoryErrorType); volatile counts
# reset when the driver loads, aggregate ones last the device's lifetime
# (MtmlEccCounterType). The volatile pair is what `ecc_sbe_total`/`ecc_dbe_total` mean for
# dcgm-exporter (DCGM_FI_DEV_ECC_*_VOL_TOTAL).
_ECC = (
    ("ecc_sbe_total", "MTML_MEMORY_ERROR_TYPE_CORRECTED", "MTML_VOLATILE_ECC"),
    ("ecc_dbe_total", "MTML_MEMORY_ERROR_TYPE_UNCORRECTED", "MTML_VOLATILE_ECC"),
    ("ecc_sbe_aggregate", "MTML_MEMORY_ERROR_TYPE_CORRECTED", "MTML_AGGREGATE_ECC"),
    ("ecc_dbe_aggregate", "MTML_MEMORY_ERROR_TYPE_UNCORRECTED", "MTML_AGGREGATE_ECC"),
)


def _ecc(lib: ModuleType, memory: Any) -> dict[str, float]:
    """ECC counts and retired pages (devices with ECC on; others leave them out)."""
    out: dict[str, float] = {}
    dram = lib.MTML_MEMORY_LOCATION_DRAM
    for name, error, counter in _ECC:
        kinds = getattr(lib, error), getattr(lib, counter)
        value = _quietly(lib, partial(lib.mtmlMemoryGetEccErrorCounter, memory, *kinds, dram))
        if value is not None:
            out[name] = value
    retired = _quietly(lib, lambda: lib.mtmlMemoryGetRetiredPagesCount(memory))
    if retired is not None:
        out["retired_pages_sbe"] = retired.singleBitEcc
        out["retired_pages_dbe"] = retired.doubleBitEcc
    pending = _quietly(lib, lambda: lib.mtmlMemoryGetRetiredPagesPendingStatus(memory))
    if pending is not None:
        out["retired_pages_pending"] = 1 if pending else 0
    return out


def _mtlinks(lib: ModuleType, device: Any) -> dict[str, float]:
    """MTLink state: how many of the GPU's links are down and how many downgraded (a link
    MTML cannot read counts as neither); none on a GPU without MTLink."""
    spec = _quietly(lib, lambda: lib.mtmlDeviceGetMtLinkSpec(device))
    if spec is None or not spec.linkNum:
        return {}
    states = [
        _quietly(lib, partial(lib.mtmlDeviceGetMtLinkState, device, link))
        for link in range(spec.linkNum)
    ]
    return {
        "links_total": spec.linkNum,
        "links_down": sum(state == lib.MTML_MTLINK_STATE_DOWN for state in states),
        "links_degraded": sum(state == lib.MTML_MTLINK_STATE_DOWNGRADE for state in states),
    }
