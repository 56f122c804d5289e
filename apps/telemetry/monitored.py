"""What the checks above telemetry need from it, lent here at start-up.

Telemetry imports no check (dependencies point one way), yet the node page's GPU table says
which fields a check needs that a GPU has never reported, and the event intake accepts the
event kinds the checks judge. The health app declares both in its check
plug-ins and lends them here from its `AppConfig.ready()` (`lend`); left unlent, they fail
at start-up (apps/common/lending.py). Pure: no database.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from apps.common.lending import Registry
from apps.common.words import Words
from apps.telemetry.exporters import cannot_report


@dataclass(frozen=True)
class Needed:
    """Fields a check needs from every GPU (or every NIC port: `target` "port"), the check
    (slug and words), and why one may never have reported them."""

    label: Words
    metrics: tuple[str, ...]
    check: str
    check_label: Words
    why: Words
    target: str = "gpu"


@dataclass(frozen=True)
class EventKind:
    """An event kind the intake accepts: its slug, what a person reads, and what such an
    event belongs to (`gpu`: names its GPU by index or PCI address; `port`: names
    `device/port`; `rank`: names a rank; `node`: the node itself)."""

    slug: str
    label: Words
    target: str


@dataclass(frozen=True)
class PortGap:
    """A field a check needs that NIC ports of a node do not report (`ports`, as
    `device/port`), and whether that is every port that reports (`every`)."""

    needed: Needed
    ports: tuple[str, ...]
    every: bool


@dataclass(frozen=True)
class Gap:
    """A field a check needs that GPUs of a node have never reported: which GPUs (`gpus`),
    whether that is every GPU that reports at all (`every`), and the exporter that can never
    report it when their values come from one (`exporter`, its name; '' otherwise)."""

    needed: Needed
    gpus: tuple[int, ...]
    every: bool
    exporter: str = ""


# The XID is telemetry's own event (the kernel log's and the exporter's XID gauge): the
# intake accepts it whatever the checks above declare.
XID = EventKind("xid", _("XID error"), "gpu")

# "needs": list[Needed]; "event_kinds": slug → EventKind (the checks' own, beside the XID).
_lent = Registry(
    "apps.telemetry.monitored",
    lenders={"needs": "the health app", "event_kinds": "the health app"},
)


def lend(
    *, needs: Iterable[Needed] | None = None, event_kinds: Iterable[EventKind] | None = None
) -> None:
    """Register the fields the checks need and the event kinds they judge (the health app
    calls this once at start-up; a second call with the same declarations changes nothing)."""
    if needs is not None:
        lent_needs: list[Needed] = _lent.setdefault("needs", [])
        lent_needs.extend(n for n in needs if n not in lent_needs)
    if event_kinds is not None:
        kinds: dict[str, EventKind] = _lent.setdefault("event_kinds", {})
        kinds.update((kind.slug, kind) for kind in event_kinds)


def needed_fields(target: str = "gpu") -> tuple[Needed, ...]:
    """Every field a check needs per GPU (or per `target`), in the order the checks
    declared them."""
    return tuple(n for n in _lent["needs"] if n.target == target)


def event_kinds() -> Mapping[str, EventKind]:
    """slug → every event kind the intake accepts."""
    return {XID.slug: XID, **_lent["event_kinds"]}


def reporting_gaps(
    gpus: Iterable[tuple[int, Mapping[str, object] | None]],
    sources: Mapping[int, str] | None = None,
) -> tuple[list[Gap], tuple[int, ...]]:
    """From (index, metrics ever reported) per GPU: the needed fields some GPUs never
    reported, and the GPUs that never reported anything (`metrics` empty). A GPU's stored
    metrics keep every name it has reported, so a name missing there was never reported.

    `sources` (index → the GPU's `source`, its exporter's mapping file) splits a field's gap
    by the exporter whose file cannot fill it — "not reported by <exporter>" — from the GPUs
    that could report it and did not (docs/integrations.md, Exporters and their mapping
    files)."""
    gpus = list(gpus)
    sources = sources or {}
    silent = tuple(sorted(index for index, metrics in gpus if not metrics))
    reporting = [(index, metrics) for index, metrics in gpus if metrics]
    out = []
    for needed in needed_fields("gpu"):
        missing: dict[str, list[int]] = {}
        for index, metrics in reporting:
            source = sources.get(index, "")
            blind = cannot_report(source, needed.metrics) if source else ""
            if blind or not any(name in metrics for name in needed.metrics):
                missing.setdefault(blind, []).append(index)
        for exporter, indexes in sorted(missing.items()):
            out.append(
                Gap(needed, tuple(sorted(indexes)), len(indexes) == len(reporting), exporter)
            )
    return out, silent


def port_gaps(ports: Iterable[tuple[str, Mapping[str, object] | None]]) -> list[PortGap]:
    """From (device/port, counters of its latest reading) per port that reported: the
    fields the checks need that some ports do not report. A port's counters are its latest
    reading's, so a name missing there is not reported by its source now (node_exporter
    publishes no `hw_counters`, for one)."""
    reporting = [(name, counters or {}) for name, counters in ports]
    out = []
    for needed in needed_fields("port"):
        missing = tuple(
            name for name, counters in reporting if not any(m in counters for m in needed.metrics)
        )
        if missing:
            out.append(PortGap(needed, missing, len(missing) == len(reporting)))
    return out
