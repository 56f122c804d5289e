"""Telemetry metric names (docs/integrations.md, dcgm-exporter fields), their DCGM fields,
and how pages show them."""

from __future__ import annotations

from dataclasses import dataclass

# dcgm-exporter field → KUAE's name.
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
    # docs/xid.md: the error counters the `gpu_errors` check reads.
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": "nvlink_crc_errors",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "pcie_replay_total",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": "row_remap_failure",
    "DCGM_FI_DEV_ROW_REMAP_PENDING": "row_remap_pending",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": "sm_clock_throttle",
    # DCGM 3.3 renamed the throttle bitmask (same field, 112); a counters file may use either.
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": "sm_clock_throttle",
}

# What the GEMM probe reports (kuae-agent probe).
PROBE_METRICS = frozenset({"gemm_tflops", "gemm_checksum"})

# Counters: a growth is an event of this kind (value = new count, previous = the count
# before), so a check sees how much each grew since its last run; a decrease is a reset
# (driver reload), noted once, not an error.
COUNTER_EVENTS = {
    "ecc_sbe_total": "ecc_sbe",
    "ecc_dbe_total": "ecc_dbe",
    "nvlink_crc_errors": "nvlink_crc",
    "pcie_replay_total": "pcie_replay",
}
COUNTERS = tuple(COUNTER_EVENTS)

# The values new samples are compared with for events (XID appears, a counter grows).
EVENT_METRICS = ("xid", *COUNTERS)

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
    MetricColumn("nvlink_crc_errors", "NVLink CRC", ""),
    MetricColumn("pcie_replay_total", "PCIe replay", ""),
    MetricColumn("row_remap_failure", "Remap failed", ""),
    MetricColumn("gemm_tflops", "GEMM", "TFLOP/s", 1),
)

METRIC_NAMES = frozenset(
    {c.key for c in GPU_COLUMNS}
    | {"nvlink_bw_total", "gemm_checksum", "row_remap_pending", "sm_clock_throttle"}
)
