"""Blast radius (docs/checks.md, Blast radius): failing nodes that share a component are one
failure.

When one check run finds failing nodes of which at least `MIN_NODES` share a leaf switch,
a PDU or an NVLink domain, and they are at least `MIN_SHARE` of that component's nodes,
the component is what failed: one incident for it, naming all those nodes, instead of one
per node. Pure: plain values in, groups out (`apps.health.outcomes` opens the incidents).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from apps.health.choices import ResultStatus
from apps.incidents.choices import Category

if TYPE_CHECKING:  # the heartbeat detector imports this module: no cycle at run time
    from apps.health.detectors.findings import Finding

# The components a node hangs off, in the order a tie between them is broken, and the
# incident category each one's failure is.
KINDS: tuple[str, ...] = ("switch", "pdu", "nvlink_domain")
CATEGORY: dict[str, Category] = {
    "switch": Category.NETWORK_SWITCH_CABLE,
    "pdu": Category.POWER_SUPPLY,
    "nvlink_domain": Category.GPU,
    "storage": Category.STORAGE,  # named by its findings (a mount's device), no node's place
}
LABEL: dict[str, str] = {
    "switch": "switch",
    "pdu": "PDU",
    "nvlink_domain": "NVLink domain",
    "storage": "storage",
}
# Components whose failure is theirs alone: the nodes behind one keep their state (a
# broken NFS export is no reason to drain the nodes that mount it).
SPARES_NODES = frozenset({"storage"})
MIN_NODES = 3
MIN_SHARE = 0.5


@dataclass(frozen=True)
class Place:
    """Where a node sits: its leaf switch, PDU and NVLink domain ("" when unknown)."""

    switch: str = ""
    pdu: str = ""
    nvlink_domain: str = ""

    def of(self, kind: str) -> str:
        """The component of `kind` ("switch", "pdu", "nvlink_domain") it hangs off."""
        value: str = getattr(self, kind)
        return value


@dataclass(frozen=True)
class Component:
    """A component whose failing nodes are one failure: `nodes` of its `size` nodes."""

    kind: str
    name: str
    nodes: tuple[str, ...]
    size: int

    @property
    def key(self) -> str:
        """`switch:leaf-07`: how incidents and the API name it."""
        return f"{self.kind}:{self.name}"

    @property
    def category(self) -> Category:
        """The incident category of its failure."""
        return CATEGORY[self.kind]

    @property
    def label(self) -> str:
        """`switch leaf-07`, `PDU pdu-3a`, `NVLink domain nvl-2` for titles."""
        return f"{LABEL[self.kind]} {self.name}"


@dataclass(frozen=True)
class Group:
    """A failing component and the findings on its nodes that it explains."""

    component: Component
    findings: tuple[Finding, ...]


def component_key(kind: str, name: str) -> str:
    """`switch:leaf-07`."""
    return f"{kind}:{name}"


def split_key(key: str) -> tuple[str, str] | None:
    """(`switch`, `leaf-07`) from `switch:leaf-07`; None for a string that names no
    component kind."""
    kind, _, name = key.partition(":")
    return (kind, name) if kind in CATEGORY and name else None


def components(failing: Collection[str], places: Mapping[str, Place]) -> list[Component]:
    """The components that explain some of the `failing` hostnames: each claims the failing
    nodes behind it when they are at least `MIN_NODES` and at least `MIN_SHARE` of its
    nodes (`places` holds every node of the cluster, for the sizes). A node is in at most
    one: the component with the most failing nodes claims first (then the larger share,
    then switch before PDU before NVLink domain), and what is left of the others must still
    pass both bars."""
    members: dict[tuple[str, str], list[str]] = defaultdict(list)
    for host, place in places.items():
        for kind in KINDS:
            name = place.of(kind)
            if name:
                members[(kind, name)].append(host)
    down = set(failing)
    candidates = []
    for (kind, name), hosts in members.items():
        hit = sorted(h for h in hosts if h in down)
        if _enough(len(hit), len(hosts)):
            candidates.append((kind, name, hit, len(hosts)))
    candidates.sort(key=lambda c: (-len(c[2]), -len(c[2]) / c[3], KINDS.index(c[0]), c[1]))
    claimed: set[str] = set()
    out = []
    for kind, name, hit, size in candidates:
        left = tuple(h for h in hit if h not in claimed)
        if _enough(len(left), size):
            out.append(Component(kind, name, left, size))
            claimed.update(left)
    return out


def _enough(failing: int, size: int) -> bool:
    return size > 0 and failing >= MIN_NODES and failing >= MIN_SHARE * size


def groups(findings: Iterable[Finding], places: Mapping[str, Place]) -> list[Group]:
    """The run's failing node findings (fail, with an incident category, on a node) that
    failing components explain, one group per component; findings of a node no component
    explains are in none. Findings that name their own component (a NIC port names the
    switch at its cable's far end) are grouped by it first; the nodes' places then explain
    what is left."""
    failing: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        if f.status == ResultStatus.FAIL and f.node and f.category:
            failing[f.node].append(f)
    if len(failing) < MIN_NODES:
        return []
    out = _named_groups([f for fs in failing.values() for f in fs if f.component])
    claimed = grouped_nodes(out)
    rest = [h for h in failing if h not in claimed]
    return out + [
        Group(c, tuple(f for h in c.nodes for f in failing[h])) for c in components(rest, places)
    ]


def _named_groups(findings: Sequence[Finding]) -> list[Group]:
    """The components the failing findings name themselves that pass both bars, most failing
    nodes first; a node is in at most one (its findings naming other components stay out)."""
    hit: dict[str, dict[str, list[Finding]]] = defaultdict(lambda: defaultdict(list))
    size: dict[str, int] = {}
    for f in findings:
        if f.node and split_key(f.component):
            hit[f.component][f.node].append(f)
            size[f.component] = max(size.get(f.component, 0), f.component_size)
    out: list[Group] = []
    claimed: set[str] = set()
    for key in sorted(hit, key=lambda k: (-len(hit[k]), k)):
        hosts = sorted(h for h in hit[key] if h not in claimed)
        if not _enough(len(hosts), size[key]):
            continue
        kind, name = key.split(":", 1)
        claimed.update(hosts)
        component = Component(kind, name, tuple(hosts), size[key])
        out.append(Group(component, tuple(f for h in hosts for f in hit[key][h])))
    return out


def spared(found: Sequence[Group]) -> set[int]:
    """The ids of the findings whose nodes keep their state: those a component of
    `SPARES_NODES` explains."""
    return {id(f) for g in found if g.component.kind in SPARES_NODES for f in g.findings}


def grouped_nodes(found: Sequence[Group]) -> set[str]:
    """Every hostname the groups name."""
    return {h for g in found for h in g.component.nodes}
