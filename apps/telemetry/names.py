"""Telemetry metric names (docs/integrations.md, dcgm-exporter fields), their DCGM fields,
and how pages show them."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from apps.common.words import Words
from apps.telemetry.exporters import exporter

# dcgm-exporter field → KUAE's name, from its mapping file (data/exporters/dcgm.csv; AMD's and
# Gaudi's beside it, read by apps.telemetry.exporters).
DCGM_FIELDS = exporter("dcgm").fields()

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
    label: Words
    unit: str
    digits: int = 0


GPU_COLUMNS = (
    MetricColumn("gpu_util", _("Util"), "%"),
    MetricColumn("tensor_active", "Tensor", "", 2),
    MetricColumn("temp_c", _("Temp"), "°C"),
    MetricColumn("mem_temp_c", _("HBM temp"), "°C"),
    MetricColumn("power_w", _("Power"), "W"),
    MetricColumn("sm_clock_mhz", _("SM clock"), "MHz"),
    MetricColumn("mem_used_mib", _("FB used"), "MiB"),
    MetricColumn("xid", "XID", ""),
    MetricColumn("ecc_sbe_total", "ECC SBE", ""),
    MetricColumn("ecc_dbe_total", "ECC DBE", ""),
    MetricColumn("nvlink_crc_errors", "NVLink CRC", ""),
    MetricColumn("pcie_replay_total", _("PCIe replay"), ""),
    MetricColumn("row_remap_failure", _("Remap failed"), ""),
    MetricColumn("gemm_tflops", "GEMM", "TFLOP/s", 1),
)

METRIC_NAMES = frozenset(
    {c.key for c in GPU_COLUMNS}
    | {"nvlink_bw_total", "gemm_checksum", "row_remap_pending", "sm_clock_throttle"}
    # docs/integrations.md, Exporters and their mapping files: which temperature temp_c is,
    # and Gaudi's NIC ports down.
    | {"temp_edge_c", "temp_junction_c", "links_down"}
)
