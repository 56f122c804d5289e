"""The health checks of docs/checks.md as pure functions: plain values in, findings out.

One module per kind. No database here: each check's plug-in (`apps.health.checks`) loads
its inputs in a few set-based queries and `apps.health.outcomes` applies the findings.
Every detector returns a finding for every target it looked at — pass included — so a
condition that clears shows as pass on the next run.
"""

from apps.health.detectors.fabric import FabricPort, fabric
from apps.health.detectors.findings import Finding, Outcome
from apps.health.detectors.gpu_errors import GpuEvent, NodeGpus, gpu_errors
from apps.health.detectors.gpus import GpuLatest
from apps.health.detectors.heartbeat import NodeSeen, heartbeat
from apps.health.detectors.job_hang import JobProgress, job_hang
from apps.health.detectors.preflight import preflight
from apps.health.detectors.sdc import NonFinite, sdc
from apps.health.detectors.slow_node import slow_node
from apps.health.detectors.thermal import thermal

__all__ = [
    "FabricPort",
    "Finding",
    "GpuEvent",
    "GpuLatest",
    "JobProgress",
    "NodeGpus",
    "NodeSeen",
    "NonFinite",
    "Outcome",
    "fabric",
    "gpu_errors",
    "heartbeat",
    "job_hang",
    "preflight",
    "sdc",
    "slow_node",
    "thermal",
]
