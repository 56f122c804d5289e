"""The health checks, one plug-in module each (`checks/<kind>.py`, see `checks/base.py`).

`PLUGINS` is the one place a check is registered: its module's `SPEC`. The schedule, the
run-now choices, the thresholds form and docs table, the Prometheus pulls, the intake's
event kinds and the "not reported" / "not monitored" notices are all read from here.
"""

from __future__ import annotations

from apps.health.checks import fabric, gpu_errors, heartbeat, job_hang, sdc, slow_node, thermal
from apps.health.checks.base import CheckSpec, Context, Target, skip_maintenance
from apps.telemetry import monitored

PLUGINS: tuple[CheckSpec, ...] = (
    heartbeat.SPEC,
    job_hang.SPEC,
    slow_node.SPEC,
    sdc.SPEC,
    gpu_errors.SPEC,
    thermal.SPEC,
    fabric.SPEC,
)

CHECKS: dict[str, CheckSpec] = {spec.kind: spec for spec in PLUGINS}
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
