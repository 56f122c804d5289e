"""`gpu_errors`: ECC, row remapping, XIDs, link errors and GPUs that vanish
(docs/checks.md, `gpu_errors`; docs/xid.md).

Every rule looks only at what arrived since the previous run (events) or at the latest
values, so a persisting XID gauge or an unchanged counter is never a new error.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from apps.fleet.choices import NodeState
from apps.health.detectors.findings import (
    Finding,
    Outcome,
    failed,
    gpu_target,
    node_target,
    number,
    passed,
    unchecked,
    warned,
    worse,
)
from apps.health.detectors.gpus import GpuLatest
from apps.health.detectors.xid import classify_xid
from apps.incidents.choices import Category, Severity
from apps.telemetry.exporters import cannot_report, exporters

if TYPE_CHECKING:  # the check's thresholds, declared by its plug-in
    from apps.health.checks.gpu_errors import GpuErrorsLimits

KIND = "gpu_errors"
LINK_COUNTERS = {"nvlink_crc": "NVLink CRC errors", "pcie_replay": "PCIe replays"}


def _out_of_service(category: Category) -> Outcome:
    return Outcome(category, Severity.SEV2, interrupts_job=True, node_state=NodeState.DRAINED)


MEMORY = _out_of_service(Category.GPU_HBM)
GPU_LOST = _out_of_service(Category.GPU)
LINK = Outcome(Category.GPU, Severity.SEV3, node_state=NodeState.SUSPECT)


# What the check cannot pass a GPU without (docs/checks.md, Blind results): a GPU whose
# exporter can never report one of these is `error`, "not checked", rather than passing.
BLINDING = (("ECC", ("ecc_dbe_total",)), ("link errors", ("nvlink_crc_errors",)))


# A GPU with nothing new: what the plug-in's candidates query takes as passing unchanged.
NOTHING_NEW = "no new XID, ECC or link error"
EVERY_GPU = "every GPU reporting"  # a node's, likewise


def blinding_sources() -> list[str]:
    """The exporters (a GPU's `source`) whose GPUs are `error` rather than passing when
    nothing is found (`_blind`): their GPUs are always judged."""
    return [
        e.slug for e in exporters() if any(cannot_report(e.slug, names) for _, names in BLINDING)
    ]


# A Moore Threads driver's fault line from the kernel log (the node agent's follower).
MTHREADS_DRIVER = "mthreads_driver"


@dataclass(frozen=True)
class GpuEvent:
    """Something a GPU reported since the previous run: an XID (value = code), ECC growth,
    a link counter's growth (value and previous), or a counter reset. `gpu` is None for a
    kernel-log XID whose PCI address (`pci_bus`) matches no GPU the node reported yet."""

    node: str
    gpu: int | None
    at: dt.datetime
    kind: str
    value: float
    previous: float | None = None
    pci_bus: str = ""

    @property
    def target(self) -> str:
        """The GPU's result target: by index, else by PCI address."""
        return gpu_target(self.node, self.gpu if self.gpu is not None else self.pci_bus or "?")


@dataclass(frozen=True)
class NodeGpus:
    """A node in service: how many GPUs it has, and how many reported fresh values."""

    hostname: str
    gpu_count: int
    reporting: int


def gpu_errors(
    events: Sequence[GpuEvent],
    gpus: Sequence[GpuLatest],
    *,
    limits: GpuErrorsLimits,
    nodes: Sequence[NodeGpus] = (),
    missing_runs: Mapping[str, int] | None = None,
) -> list[Finding]:
    """The worst verdict per GPU from its events and latest values, plus one per node whose
    GPUs stopped reporting while its others still do. `missing_runs` is each node target's
    count of such runs in a row up to the previous run (its result's `missing_runs`)."""
    worst: dict[str, Finding] = {}
    xids: dict[str, Counter[int]] = defaultdict(Counter)
    for e in sorted(events, key=lambda e: e.at):
        target = e.target
        finding = _event(e, target)
        if e.kind == "xid":
            xids[target][int(e.value)] += 1
        if finding is not None:
            worst[target] = worse(worst.get(target), finding)
    for target, counts in xids.items():
        if target in worst:
            found = worst[target]
            worst[target] = Finding(
                found.kind,
                found.target,
                found.status,
                found.message,
                {**found.details, "xid_counts": {str(c): n for c, n in sorted(counts.items())}},
                found.node,
                found.job,
                found.outcome,
                found.occurred_at,
            )
    for finding in _link_growth(events, limits) + _row_remap(gpus):
        worst[finding.target] = worse(worst.get(finding.target), finding)
    out = list(worst.values())
    for gpu in gpus:
        target = gpu_target(gpu.node, gpu.index)
        if target in worst:
            continue  # what it can see decides, a fail or a warn over being blind
        blind = _blind(gpu)
        if blind is None:
            out.append(passed(KIND, target, NOTHING_NEW, node=gpu.node))
        else:
            out.append(blind)
    out.extend(_missing(nodes, limits, missing_runs or {}))
    return out


def _blind(gpu: GpuLatest) -> Finding | None:
    """`error` for a GPU whose exporter can never report a field of BLINDING (the exporter's
    mapping file has no line for it: Gaudi's, ECC and link errors); None otherwise."""
    if not gpu.source:
        return None
    unseen = [(label, names) for label, names in BLINDING if cannot_report(gpu.source, names)]
    if not unseen:
        return None
    exporter = cannot_report(gpu.source, unseen[0][1])
    labels = [label for label, _ in unseen]
    message = f"not checked: {labels[0]} not reported by {exporter}"
    if len(labels) > 1:
        message += f" (nor {', '.join(labels[1:])})"
    details = {
        "blind": True,
        "exporter": exporter,
        "not_reported": [name for _, names in unseen for name in names],
    }
    return unchecked(KIND, gpu_target(gpu.node, gpu.index), message, details, node=gpu.node)


def _event(e: GpuEvent, target: str) -> Finding | None:
    where = f"GPU {e.gpu}" if e.gpu is not None else "a GPU"
    details: dict[str, object] = {"event": e.kind, "value": e.value, "at": e.at.isoformat()}
    if e.kind == "ecc_dbe":
        message = f"ECC double-bit errors on {where} grew to {e.value:g}"
        return failed(KIND, target, message, details, outcome=MEMORY, node=e.node, occurred_at=e.at)
    if e.kind == MTHREADS_DRIVER:  # no published catalogue: unknown, it warns
        message = (
            f"Moore Threads driver fault on {where}: no published catalogue of the driver's "
            "lines, so it is judged unknown (see the node's events for the line)"
        )
        return warned(KIND, target, message, details, node=e.node, occurred_at=e.at)
    if e.kind != "xid":
        return None
    xid = classify_xid(int(e.value))
    details |= {"xid": xid.code, "mnemonic": xid.mnemonic, "action": xid.action}
    said = f"XID {xid.code} on {where}" + (f" ({xid.mnemonic})" if xid.mnemonic else "")
    if xid.out_of_service:
        message = f"{said}: {xid.action}"
        return failed(
            KIND,
            target,
            message,
            details,
            outcome=_out_of_service(xid.category),
            node=e.node,
            occurred_at=e.at,
        )
    if not xid.known:
        return warned(KIND, target, f"{said}: unknown to the XID catalogue", details, node=e.node)
    return warned(KIND, target, f"{said}: {xid.action}", details, node=e.node)


def _link_growth(events: Sequence[GpuEvent], limits: GpuErrorsLimits) -> list[Finding]:
    """Link error counters that grew by more than the limit since the previous run: the sum
    of what each growth added, so a reset in between (a driver reload zeroes the counters,
    noted as a `counter_reset` event) never counts the counter's old value as growth."""
    growth: dict[tuple[str, int, str], float] = defaultdict(float)
    for e in events:
        if e.kind not in LINK_COUNTERS or e.gpu is None:
            continue
        if e.previous is not None:
            growth[e.node, e.gpu, e.kind] += max(0.0, e.value - e.previous)
    out = []
    for (node, gpu, kind), grew in sorted(growth.items()):
        if grew > limits.link_errors_growth:
            message = f"{LINK_COUNTERS[kind]} on GPU {gpu} grew by {grew:g} since the last run"
            details = {"counter": kind, "grew": grew, "limit": limits.link_errors_growth}
            out.append(
                warned(KIND, gpu_target(node, gpu), message, details, outcome=LINK, node=node)
            )
    return out


def _row_remap(gpus: Sequence[GpuLatest]) -> list[Finding]:
    """A GPU whose memory could not remap a failing row."""
    out = []
    for gpu in gpus:
        value = number(gpu.metrics.get("row_remap_failure"))
        if value:
            message = f"GPU {gpu.index}: HBM row remapping failed"
            details = {"row_remap_failure": value}
            target = gpu_target(gpu.node, gpu.index)
            out.append(failed(KIND, target, message, details, outcome=MEMORY, node=gpu.node))
    return out


def _missing(
    nodes: Sequence[NodeGpus], limits: GpuErrorsLimits, before: Mapping[str, int]
) -> list[Finding]:
    """A node reporting fewer GPUs than it has while some still report — for the runs the
    limit asks in a row — lost a GPU (the way one that fell off the bus often shows)."""
    out = []
    for n in nodes:
        target = node_target(n.hostname)
        short = 0 < n.reporting < n.gpu_count
        runs = before.get(target, 0) + 1 if short else 0
        details = {"gpu_count": n.gpu_count, "reporting": n.reporting, "missing_runs": runs}
        if short and runs >= limits.gpu_missing_runs:
            message = f"{n.gpu_count - n.reporting} of {n.gpu_count} GPUs stopped reporting"
            out.append(failed(KIND, target, message, details, outcome=GPU_LOST, node=n.hostname))
        elif short:
            message = f"{n.reporting} of {n.gpu_count} GPUs reporting; fails if it lasts"
            out.append(passed(KIND, target, message, details, node=n.hostname))
        else:
            out.append(passed(KIND, target, EVERY_GPU, details, node=n.hostname))
    return out
