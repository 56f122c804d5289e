"""A detector's verdict on one target, what it causes, and small constructors for both."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from apps.fleet.choices import NodeState
from apps.health.choices import ResultStatus
from apps.incidents.choices import Category, Severity


@dataclass(frozen=True)
class Outcome:
    """What a warn or fail causes: an incident of `category` (none without one) at
    `severity`, interrupting the job on the node or not, and the state to put the node in."""

    category: Category | None = None
    severity: Severity = Severity.SEV3
    interrupts_job: bool = False
    node_state: NodeState | None = None


NOTHING = Outcome()


@dataclass(frozen=True)
class Finding:
    """A verdict on one target (`node:HOST`, `gpu:HOST/I`, `job:ID`, `cluster:NAME`)."""

    kind: str
    target: str
    status: ResultStatus
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    node: str | None = None
    job: int | None = None
    outcome: Outcome = NOTHING
    occurred_at: dt.datetime | None = None
    # Nodes a job's finding names as the cause (a hang's culprit ranks' nodes), and the
    # sentence that says why: the incident names them and is localised when it first does.
    culprits: tuple[str, ...] = ()
    localized: str = ""
    # Those of `culprits` the verdict itself blames (a minority of ranks), each of which
    # becomes `suspect` with the finding as its reason; nodes named only on the other
    # evidence are not moved (docs/checks.md, Ranks).
    suspects: tuple[str, ...] = ()
    # The component the finding itself points at (`switch:leaf-07`, a port's far end) and
    # how many nodes hang off it: blast radius groups by it before the nodes' places.
    component: str = ""
    component_size: int = 0

    @property
    def category(self) -> Category | None:
        """The incident category a warn or fail opens (None: no incident)."""
        return self.outcome.category

    @property
    def severity(self) -> Severity:
        """The severity of that incident."""
        return self.outcome.severity

    @property
    def interrupts_job(self) -> bool:
        """Whether that incident interrupts the job running on the node."""
        return self.outcome.interrupts_job

    @property
    def node_state(self) -> NodeState | None:
        """The state the node should be put in (never a better one)."""
        return self.outcome.node_state


def node_target(host: str) -> str:
    """The result target of a node."""
    return f"node:{host}"


def gpu_target(host: str, index: int | str) -> str:
    """The result target of one GPU of a node (by index, or by PCI address until the node
    reports which index that is)."""
    return f"gpu:{host}/{index}"


@dataclass(frozen=True)
class TargetType:
    """A kind of result target: its prefix (`gpu` of `gpu:h01/3`) and, for one that names a
    part of a node, the word a person reads before that part ("GPU 3") and what separates
    the part from the node's name (`/`, or `:` for a mount point, which holds slashes)."""

    prefix: str
    word: str = ""  # '' for a target that names no part of a node (a node, job, cluster)
    sep: str = "/"
    # A part a node has one of (its clock) may be named by the node alone: `clock:h01`.
    one_per_node: bool = False

    def make(self, host: str, part: str) -> str:
        """`gpu:h01/3`, `mount:h01:/checkpoints`."""
        return f"{self.prefix}:{host}{self.sep}{part}"

    def part(self, rest: str) -> tuple[str, str] | None:
        """(node, the part in words) of a target's text after its prefix; None when this
        type names no part, or the text names none."""
        if not self.word:
            return None
        host, _, part = rest.partition(self.sep)
        if not host:
            return None
        if not part:
            return (host, self.word) if self.one_per_node else None
        return host, f"{self.word} {part}"


# Every prefix a result's target may carry, each parsed and worded by its `TargetType`. The
# kinds every check may use are declared here; a check whose results are about a part of a
# node of its own (a memory controller, a mount) declares that type in its own detector
# module with `declare_target`, which the server runs at start-up as it loads the checks.
TARGET_TYPES: dict[str, TargetType] = {}


def declare_target(kind: TargetType) -> TargetType:
    """Register a target type by its prefix and return it; a second, different type of the
    same prefix is a TypeError at start-up (two checks cannot both own `mc:`)."""
    known = TARGET_TYPES.setdefault(kind.prefix, kind)
    if known != kind:
        raise TypeError(f"target prefix {kind.prefix!r} declared twice: {known} and {kind}")
    return kind


GPU = declare_target(TargetType("gpu", "GPU"))
PORT = declare_target(TargetType("port", "port"))
NODE = declare_target(TargetType("node"))
JOB = declare_target(TargetType("job"))
RANK = declare_target(TargetType("rank"))
CLUSTER = declare_target(TargetType("cluster"))
SOURCE = declare_target(TargetType("source"))


def target_part(target: str) -> tuple[str, str] | None:
    """The node and the part of it a target names: `gpu:h01/3` → ("h01", "GPU 3"),
    `port:h01/mlx5_0/1` → ("h01", "port mlx5_0/1"), `mc:h01/mc0` → ("h01", "memory
    controller mc0"), `clock:h01` → ("h01", "clock"), `mount:h01:/checkpoints` → ("h01",
    "mount /checkpoints"); None for a target that names no part (a node, a job). A prefix
    no `TargetType` declares is a ValueError, never silently no part. The checks' own
    types are declared when `apps.health.checks` is loaded (the health app does at start-up)."""
    prefix, _, rest = target.partition(":")
    kind = TARGET_TYPES.get(prefix)
    if kind is None:
        raise ValueError(f"target {target!r}: no target type {prefix!r} (TARGET_TYPES)")
    return kind.part(rest)


def job_target(job: int) -> str:
    """The result target of a job."""
    return f"job:{job}"


def cluster_target(name: str) -> str:
    """The result target of a whole cluster."""
    return f"cluster:{name}"


def passed(
    kind: str,
    target: str,
    message: str,
    details: dict[str, Any] | None = None,
    *,
    node: str | None = None,
    job: int | None = None,
) -> Finding:
    """A pass: nothing to do (a condition that cleared shows as one)."""
    return Finding(kind, target, ResultStatus.PASS, message, details or {}, node, job)


def warned(
    kind: str,
    target: str,
    message: str,
    details: dict[str, Any] | None = None,
    *,
    outcome: Outcome = NOTHING,
    node: str | None = None,
    job: int | None = None,
    occurred_at: dt.datetime | None = None,
) -> Finding:
    """A warning, with what it causes (by default nothing but the result)."""
    return Finding(
        kind, target, ResultStatus.WARN, message, details or {}, node, job, outcome, occurred_at
    )


def failed(
    kind: str,
    target: str,
    message: str,
    details: dict[str, Any] | None = None,
    *,
    outcome: Outcome,
    node: str | None = None,
    job: int | None = None,
    occurred_at: dt.datetime | None = None,
    component: str = "",
    component_size: int = 0,
) -> Finding:
    """A failure and what it causes (and the component it points at, if it knows one)."""
    return Finding(
        kind,
        target,
        ResultStatus.FAIL,
        message,
        details or {},
        node,
        job,
        outcome,
        occurred_at,
        component=component,
        component_size=component_size,
    )


def unchecked(
    kind: str,
    target: str,
    message: str,
    details: dict[str, Any] | None = None,
    *,
    node: str | None = None,
) -> Finding:
    """Not checked (`error`): the check is blind there — never a pass, and it opens no
    incident and changes no node (docs/checks.md, Blind results)."""
    return Finding(kind, target, ResultStatus.ERROR, message, details or {}, node)


_WORSE = {ResultStatus.PASS: 0, ResultStatus.ERROR: 1, ResultStatus.WARN: 2, ResultStatus.FAIL: 3}


def worse(a: Finding | None, b: Finding) -> Finding:
    """The worse of two findings on one target (the first on a tie)."""
    return b if a is None or _WORSE[b.status] > _WORSE[a.status] else a


def finite(values: Iterable[float | None]) -> list[float]:
    """The finite numbers among `values`, in order."""
    return [v for v in values if v is not None and math.isfinite(v)]


def number(value: object) -> float | None:
    """`value` as a finite number, else None (a metric may be missing or a string)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None
