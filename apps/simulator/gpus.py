"""One simulated GPU's telemetry: its counters, its id and its values, under the names its
vendor's way in fills (docs/simulator.md, Accelerators). Pure."""

from __future__ import annotations

import random
from dataclasses import dataclass

from apps.simulator.accelerators import H100, Accelerator


@dataclass
class GpuCounters:
    """A GPU's counters, which only grow (until a driver reload)."""

    ecc_sbe_total: int = 0
    nvlink_bw_total: int = 0

    @classmethod
    def start(cls, rng: random.Random) -> GpuCounters:
        """Counters as a GPU in service for a while has them."""
        return cls(rng.choice((0, 0, 0, 0, 1, 2, 5)), rng.randrange(10**12, 10**13))

    def advance(self, rng: random.Random, *, busy: bool, seconds: float) -> None:
        """Move on by `seconds`: NVLink traffic when busy, a correctable error very rarely."""
        self.nvlink_bw_total += int((rng.uniform(2e11, 4e11) if busy else 1e6) * seconds)
        if rng.random() < 0.0005:
            self.ecc_sbe_total += 1


def gpu_uuid(seed: int, hostname: str, index: int) -> str:
    """A stable, UUID-shaped GPU id for a simulated GPU."""
    h = random.Random(f"{seed}/{hostname}/{index}").getrandbits(128)
    x = f"{h:032x}"
    return f"GPU-{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


def gpu_metrics(
    rng: random.Random,
    *,
    busy: bool,
    counters: GpuCounters,
    gemm_scale: float = 1.0,
    gpu: Accelerator = H100,
) -> dict[str, float]:
    """Plausible values for one GPU, busy or idle, under the names its way in fills
    (docs/integrations.md): dcgm-exporter's for NVIDIA, AMD's device-metrics-exporter's
    (junction temperature, XGMI errors as the link counter), Intel Gaudi's exporter's (no
    ECC, NIC ports down), MTML's through the agent (memory total, MTLink state)."""
    if gpu.vendor == "nvidia":
        return _dcgm(rng, busy=busy, counters=counters, gemm_scale=gemm_scale)
    temp = round(rng.uniform(*gpu.temp_c) if busy else rng.uniform(32, 42))
    out: dict[str, float] = {
        "gpu_util": round(rng.uniform(93, 100) if busy else rng.uniform(0, 3)),
        "temp_c": temp,
        "power_w": round(rng.uniform(*gpu.power_w) if busy else rng.uniform(*gpu.idle_w), 1),
        "mem_used_mib": round(rng.uniform(0.86, 0.97) * gpu.mem_mib if busy else 512),
    }
    if gpu.vendor == "amd":
        out["temp_junction_c"] = temp
        out["mem_temp_c"] = round(rng.uniform(60, 78) if busy else rng.uniform(34, 44))
        out["sm_clock_mhz"] = 2100 if busy else 140  # the system clock (gpu_clock)
        out["ecc_sbe_total"] = counters.ecc_sbe_total
        out["ecc_dbe_total"] = 0
        out["nvlink_crc_errors"] = 0  # XGMI errors (the exporter's xgmi_wafl ECC block)
        out["pcie_replay_total"] = 0
    elif gpu.vendor == "intel":
        out["temp_junction_c"] = temp
        out["sm_clock_mhz"] = 1600 if busy else 800
        out["pcie_replay_total"] = 0
        out["links_down"] = 0
    elif gpu.vendor == "mthreads":
        out["mem_total_mib"] = gpu.mem_mib
        out["ecc_sbe_total"] = counters.ecc_sbe_total
        out["ecc_dbe_total"] = 0
        out["links_down"] = 0
        out["links_degraded"] = 0
    out["gemm_tflops"] = round(rng.gauss(gpu.gemm_tflops, gpu.gemm_tflops / 120) * gemm_scale, 1)
    out["gemm_checksum"] = gpu.checksum
    return out


def _dcgm(
    rng: random.Random, *, busy: bool, counters: GpuCounters, gemm_scale: float
) -> dict[str, float]:
    """Plausible dcgm-exporter values for one H100, busy or idle."""
    return {
        "gpu_util": round(rng.uniform(93, 100) if busy else rng.uniform(0, 3)),
        "tensor_active": round(rng.uniform(0.38, 0.55) if busy else 0.0, 3),
        "temp_c": round(rng.uniform(58, 76) if busy else rng.uniform(32, 40)),
        "mem_temp_c": round(rng.uniform(62, 80) if busy else rng.uniform(34, 44)),
        "power_w": round(rng.uniform(560, 690) if busy else rng.uniform(68, 90), 1),
        "sm_clock_mhz": 1980 if busy else 345,
        "mem_used_mib": round(rng.uniform(70_000, 79_000) if busy else 512),
        "xid": 0,
        "ecc_sbe_total": counters.ecc_sbe_total,
        "ecc_dbe_total": 0,
        "nvlink_bw_total": counters.nvlink_bw_total,
        "gemm_tflops": round(rng.gauss(720, 6) * gemm_scale, 1),
        "gemm_checksum": 1834.2265625,
    }
