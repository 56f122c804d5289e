"""Telemetry metric names (CONTRACT §2), their DCGM fields, and how pages show them."""

from __future__ import annotations

from dataclasses import dataclass

# dcgm-exporter field → contract name.
DCGM_FIELDS = {
    "DCGM_FI_DEV_GPU_UTIL": "gpu_util",
    "DCGM_FI_DEV_FB_USED": "mem_used_mib",
    "DCGM_FI_DEV_GPU_TEMP": "temp_c",
    "DCGM_FI_DEV_MEMORY_TEMP": "mem_temp_c",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_SM_CLOCK": "sm_clock_mhz",
    "DCGM_FI_DEV_XID_ERRORS": "xid",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "ecc_sbe_total",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "ecc_dbe_total",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "tensor_active",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "nvlink_bw_total",
}

# What the GEMM probe reports (kuae-agent probe).
PROBE_METRICS = frozenset({"gemm_tflops", "gemm_checksum"})

# The values new samples are compared with for events (XID appears, ECC grows).
EVENT_METRICS = ("xid", "ecc_sbe_total", "ecc_dbe_total")

# Counters: a growth is an event (ECC); a decrease is a reset (driver reload), not an error.
COUNTERS = ("ecc_sbe_total", "ecc_dbe_total")

# Metrics rolled up per node per 5 minutes (min/mean/max) for charts.
ROLLUP_METRICS = (
    "gpu_util",
    "tensor_active",
    "temp_c",
    "mem_temp_c",
    "power_w",
    "sm_clock_mhz",
    "mem_used_mib",
)
ROLLUP_SECONDS = 300

# dcgm-exporter reports unsupported fields with values at or above this sentinel.
DCGM_NOT_SUPPORTED = 9223372036854775000


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
