"""Telemetry metric names (CONTRACT §2) and how pages show them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricColumn:
    """A metric as a table column: key, heading, unit and display precision."""

    key: str
    label: str
    unit: str
    digits: int = 0


GPU_COLUMNS = (
    MetricColumn("gpu_util", "Util", "%"),
    MetricColumn("tensor_active", "Tensor", "", 2),
    MetricColumn("temp_c", "Temp", "°C"),
    MetricColumn("mem_temp_c", "HBM temp", "°C"),
    MetricColumn("power_w", "Power", "W"),
    MetricColumn("sm_clock_mhz", "SM clock", "MHz"),
    MetricColumn("mem_used_mib", "FB used", "MiB"),
    MetricColumn("xid", "XID", ""),
    MetricColumn("ecc_sbe_total", "ECC SBE", ""),
    MetricColumn("ecc_dbe_total", "ECC DBE", ""),
    MetricColumn("gemm_tflops", "GEMM", "TFLOP/s", 1),
)

METRIC_NAMES = frozenset({c.key for c in GPU_COLUMNS} | {"nvlink_bw_total", "gemm_checksum"})
