"""What fails, how often, and how long it takes — from the Llama 3 405B training record.

Counts: "The Llama 3 Herd of Models" (2024), Table 5 — 419 unexpected interruptions in 54
days on 16,384 H100 GPUs (2,048 nodes). Hangs and slow nodes, which the paper folds into
other causes, are added at small shares because they are what the health checks hunt.
"""

from __future__ import annotations

from dataclasses import dataclass

LLAMA3_COUNTS = {
    "gpu": 148,
    "gpu_hbm": 72,
    "software_bug": 54,
    "network_switch_cable": 35,
    "host_maintenance": 32,
    "gpu_sram": 19,
    "gpu_system_processor": 17,
    "nic": 7,
    "nccl_timeout": 7,
    "silent_data_corruption": 6,
    "gpu_thermal": 6,
    "storage": 3,
    "power_supply": 3,
    "chassis": 2,
    "io_expansion_board": 2,
    "dependency": 2,
    "cpu": 2,
    "host_memory": 2,
}
EXTRA_COUNTS = {"hang": 14, "slow_node": 8}

# Unexpected interruptions per node-day: 419 / (2,048 nodes × 54 days).
LLAMA3_RATE_PER_NODE_DAY = 419 / (2048 * 54)

HARDWARE = frozenset(
    {
        "gpu",
        "gpu_hbm",
        "gpu_sram",
        "gpu_system_processor",
        "gpu_thermal",
        "nic",
        "storage",
        "power_supply",
        "chassis",
        "io_expansion_board",
        "cpu",
        "host_memory",
        "silent_data_corruption",
    }
)
SILENT = frozenset({"hang", "nccl_timeout", "silent_data_corruption", "slow_node"})
XID_BY_CATEGORY = {"gpu": 79, "gpu_hbm": 48, "gpu_sram": 94, "gpu_system_processor": 119}


@dataclass(frozen=True)
class Timing:
    """Seconds from failure to detection, detection to localisation, failure to recovery."""

    detect: tuple[float, float]
    localize: tuple[float, float]
    recover: tuple[float, float]


def timing(category: str) -> Timing:
    """Typical delays for a category: silent failures are found late and localised slowly."""
    if category == "silent_data_corruption":
        return Timing((1800, 7200), (1800, 14400), (5400, 14400))
    if category in SILENT:
        return Timing((300, 900), (120, 1200), (1500, 3600))
    if category in HARDWARE:
        return Timing((10, 120), (30, 600), (900, 2700))
    return Timing((30, 300), (60, 900), (900, 2400))


@dataclass(frozen=True)
class RoadTiming:
    """Seconds of each step of the road back after localisation (docs/simulator.md, The road
    back): to the drain of the blamed node, from it to the job's next attempt, that attempt's
    start-up (to the checkpoint load), and the checkpoint's restore."""

    mitigate: tuple[float, float]
    restart: tuple[float, float]
    startup: tuple[float, float]
    restore: tuple[float, float]


# Ranges in line with published large-scale training records, not measured here:
# - "Robust LLM Training Infrastructure at ByteDance" (ByteRobust, Wan et al., 2025,
#   arXiv:2509.16293): real-time checks find explicit faults in seconds, a hang (no RDMA
#   traffic) within about 10 minutes (hence `timing` above); a high-confidence fault drains
#   and evicts its machine at once, and the job restarts on warm standby machines in minutes.
# - "The Llama 3 Herd of Models" (Meta, 2024), 3.3.4: of 419 unexpected interruptions only
#   three needed significant manual intervention, the rest were handled by automation, and
#   effective training time stayed above 90%.
# - "Revisiting Reliability in Large-Scale Machine Learning Research Clusters" (Kokolis et
#   al., Meta, 2024, arXiv:2410.21680): a failure costs a restart overhead (scheduling,
#   start-up, checkpoint load) plus the work since the last checkpoint, done again.
# The flagship (thousands of GPUs, a 405B checkpoint) starts up and restores more slowly.
ROAD = RoadTiming(mitigate=(5, 120), restart=(60, 600), startup=(30, 180), restore=(20, 150))
FLAGSHIP_ROAD = RoadTiming(
    mitigate=(5, 120), restart=(120, 900), startup=(120, 360), restore=(60, 240)
)


def road_timing(*, flagship: bool) -> RoadTiming:
    """The road back's delays for a job: the flagship's, or a smaller job's."""
    return FLAGSHIP_ROAD if flagship else ROAD


def weighted_categories() -> tuple[list[str], list[int]]:
    """Categories and weights for random choice."""
    counts = {**LLAMA3_COUNTS, **EXTRA_COUNTS}
    return list(counts), list(counts.values())
