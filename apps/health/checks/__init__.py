"""The health checks, one plug-in module each (`checks/<kind>.py`, see `checks/base.py`).

`PLUGINS` is the one place a check is registered: its module's `SPEC`, and its thresholds
among `Limits`' bases. The schedule, the run-now choices, the thresholds form and docs
table, the Prometheus pulls, the intake's event kinds and the "not reported" / "not
monitored" notices are all read from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.health.checks import (
    clock,
    fabric,
    gpu_errors,
    heartbeat,
    host_memory,
    job_hang,
    pcie,
    sdc,
    slow_node,
    storage,
    thermal,
)
from apps.health.checks.base import CheckSpec, Context, Target, skip_maintenance
from apps.health.thresholds import declared
from apps.telemetry import monitored

PLUGINS: tuple[CheckSpec, ...] = (
    heartbeat.SPEC,
    job_hang.SPEC,
    slow_node.SPEC,
    sdc.SPEC,
    gpu_errors.SPEC,
    thermal.SPEC,
    fabric.SPEC,
    host_memory.SPEC,
    pcie.SPEC,
    clock.SPEC,
    storage.SPEC,
)

CHECKS: dict[str, CheckSpec] = {spec.kind: spec for spec in PLUGINS}


@dataclass(frozen=True)
class Limits(
    clock.ClockLimits,
    pcie.PcieLimits,
    host_memory.HostMemoryLimits,
    storage.StorageLimits,
    fabric.FabricLimits,
    thermal.ThermalLimits,
    gpu_errors.GpuErrorsLimits,
    sdc.SdcLimits,
    slow_node.SlowNodeLimits,
    job_hang.JobHangLimits,
    heartbeat.HeartbeatLimits,
):
    """Every check's thresholds, what one run of any check reads (a cluster's values:
    `apps.health.limits.limits_from`)."""


def _thresholds_registered() -> None:
    """Start-up: every plug-in's thresholds are among `Limits`' bases, each names its own
    check, and no two plug-ins declare a threshold of one name (a dataclass would quietly
    keep one of them)."""
    names: list[str] = []
    for spec in PLUGINS:
        if not issubclass(Limits, spec.limits):
            raise TypeError(f"{spec.limits.__name__} of {spec.kind} is not among Limits' bases")
        for f in declared(spec.limits):
            if f.metadata["check"] != spec.kind:
                raise TypeError(f"threshold {f.name} of {spec.kind} names {f.metadata['check']}")
            names.append(f.name)
    if len(names) != len(set(names)):
        raise TypeError(f"a threshold is declared twice: {sorted(names)}")


_thresholds_registered()

# The kinds beat runs; the on-demand pre-flight (services.job_preflight) is not a plug-in.
SCHEDULED_KINDS: tuple[str, ...] = tuple(s.kind for s in PLUGINS if s.scheduled)
PREFLIGHT = "preflight"
LABELS: dict[str, str] = {**{s.kind: s.label for s in PLUGINS}, PREFLIGHT: "Pre-flight"}
# Every kind a result or run may carry, for filters, forms and the OpenAPI enum.
KIND_CHOICES: list[tuple[str, str]] = list(LABELS.items())


def check_for(kind: str) -> CheckSpec:
    """The scheduled check of `kind`; ValueError for one that does not run on a schedule."""
    if kind not in SCHEDULED_KINDS:
        raise ValueError(f"{kind} does not run on a schedule")
    return CHECKS[kind]


def kind_label(kind: str) -> str:
    """What a person reads for a check's kind (an unknown slug as words)."""
    return LABELS.get(kind) or kind.replace("_", " ").capitalize()


def lend_to_telemetry() -> None:
    """Tell telemetry what the checks need of it: the fields per GPU (the node page's "not
    reported" notices) and the event kinds the intake accepts."""
    monitored.lend(
        needs=[n for spec in PLUGINS for n in spec.needs],
        event_kinds=[
            *(
                monitored.EventKind(slug, label, spec.event_target.value)
                for spec in PLUGINS
                for slug, label in spec.events.items()
            ),
            *(
                monitored.EventKind(slug, label, Target.NODE.value)
                for spec in PLUGINS
                for slug, label in spec.node_events.items()
            ),
        ],
    )


__all__ = [
    "CHECKS",
    "KIND_CHOICES",
    "LABELS",
    "Limits",
    "PLUGINS",
    "PREFLIGHT",
    "SCHEDULED_KINDS",
    "CheckSpec",
    "Context",
    "Target",
    "check_for",
    "kind_label",
    "lend_to_telemetry",
    "skip_maintenance",
]
