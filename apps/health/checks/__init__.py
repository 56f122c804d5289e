"""The health checks, one plug-in module each (`checks/<kind>.py`, see `checks/base.py`).

A check is found where it is defined: every module of this package but `base` declares a
`SPEC`, and `PLUGINS` is what the package finds, in the specs' `order`. `Limits`, what one
run of any check reads, is made of every plug-in's thresholds class. The schedule, the
run-now choices, the thresholds form and docs table, the Prometheus pulls, the intake's
event kinds and the "not reported" / "not monitored" notices are all read from these
(docs/checks.md, Writing a check). A module that declares no `SPEC`, two plug-ins of one
kind, or thresholds that clash stop the server at start-up.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from typing import TYPE_CHECKING, Any

from django.utils import translation
from django.utils.translation import gettext_lazy as _

from apps.common.words import Words
from apps.health.checks.base import CheckSpec, Context, skip_maintenance
from apps.health.detectors.findings import NODE
from apps.health.thresholds import Shared, declared
from apps.telemetry import monitored

SUPPORT = frozenset({"base"})  # modules of this package that are not plug-ins


def discover() -> tuple[CheckSpec, ...]:
    """Every plug-in of this package, in its spec's `order` (then kind)."""
    specs: list[CheckSpec] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name in SUPPORT or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        spec = getattr(module, "SPEC", None)
        if not isinstance(spec, CheckSpec):
            raise TypeError(f"apps.health.checks.{info.name} declares no SPEC (a CheckSpec)")
        specs.append(spec)
    kinds = [s.kind for s in specs]
    if len(kinds) != len(set(kinds)):
        raise TypeError(f"two plug-ins of one kind: {sorted(kinds)}")
    return tuple(sorted(specs, key=lambda s: (s.order, s.kind)))


def compose_limits(specs: tuple[CheckSpec, ...]) -> type[Shared]:
    """One frozen dataclass with every plug-in's thresholds (and the shared ones), fields in
    the plug-ins' order. Each threshold must name its own check, and no two plug-ins may
    declare one name (a dataclass would quietly keep one of them)."""
    names: list[str] = []
    for spec in specs:
        for f in declared(spec.limits):
            if f.metadata["check"] != spec.kind:
                raise TypeError(f"threshold {f.name} of {spec.kind} names {f.metadata['check']}")
            names.append(f.name)
    if len(names) != len(set(names)):
        raise TypeError(f"a threshold is declared twice: {sorted(names)}")
    bases = tuple(dict.fromkeys(s.limits for s in reversed(specs))) or (Shared,)
    doc = "Every check's thresholds: what one run of any check reads (limits_from)."
    return dataclasses.dataclass(frozen=True)(type("Limits", bases, {"__doc__": doc}))


PLUGINS: tuple[CheckSpec, ...] = discover()

CHECKS: dict[str, CheckSpec] = {spec.kind: spec for spec in PLUGINS}

if TYPE_CHECKING:
    # Made at start-up from the plug-ins: each detector types its own thresholds class.
    Limits = Any
else:
    Limits = compose_limits(PLUGINS)

# The kinds beat runs; the on-demand pre-flight (services.job_preflight) is not a plug-in.
SCHEDULED_KINDS: tuple[str, ...] = tuple(s.kind for s in PLUGINS if s.scheduled)
PREFLIGHT = "preflight"
LABELS: dict[str, Words] = {**{s.kind: s.label for s in PLUGINS}, PREFLIGHT: _("Pre-flight")}
# Every kind a result or run may carry, for filters, forms and the OpenAPI enum.
KIND_CHOICES: list[tuple[str, Words]] = list(LABELS.items())


def check_for(kind: str) -> CheckSpec:
    """The scheduled check of `kind`; ValueError for one that does not run on a schedule."""
    if kind not in SCHEDULED_KINDS:
        raise ValueError(f"{kind} does not run on a schedule")
    return CHECKS[kind]


def kind_label(kind: str) -> Words:
    """What a person reads for a check's kind, in the active language (an unknown slug as
    words)."""
    return LABELS.get(kind) or kind.replace("_", " ").capitalize()


def kind_label_english(kind: str) -> str:
    """A check's kind as words in English, whatever the active language: for what is stored
    (incident titles, timeline entries), which stays English (docs/pages.md, Language)."""
    with translation.override(None):
        return str(kind_label(kind))


def lend_to_telemetry() -> None:
    """Tell telemetry what the checks need of it: the fields per GPU (the node page's "not
    reported" notices) and the event kinds the intake accepts."""
    monitored.lend(
        needs=[n for spec in PLUGINS for n in spec.needs],
        event_kinds=[
            *(
                monitored.EventKind(slug, label, spec.event_target.prefix)
                for spec in PLUGINS
                for slug, label in spec.events.items()
            ),
            *(
                monitored.EventKind(slug, label, NODE.prefix)
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
    "compose_limits",
    "discover",
    "PREFLIGHT",
    "SCHEDULED_KINDS",
    "CheckSpec",
    "Context",
    "check_for",
    "kind_label",
    "kind_label_english",
    "lend_to_telemetry",
    "skip_maintenance",
]
