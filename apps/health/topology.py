"""The topology page (docs/checks.md, Blast radius): a cluster's switches, PDUs and NVLink domains
with their nodes coloured by state, the components with failing nodes first, and the component
an open blast-radius incident names highlighted. Each switch also counts the NIC ports cabled to
it by the `fabric` check's verdict on each (docs/checks.md, Blast radius: one incident per failing
component)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from apps.accounts.permissions import role_required
from apps.common import node_grid
from apps.fleet.choices import NodeState
from apps.fleet.models import Cluster, Node
from apps.fleet.page_cluster import page_cluster
from apps.fleet.selectors import cluster_gpu_kinds
from apps.fleet.vendors import LINK_WORDS, VENDORS, link_word, vendor_of
from apps.health import blast
from apps.health.choices import ResultStatus
from apps.health.detectors.fabric import port_target
from apps.health.models import CheckResult
from apps.incidents.choices import ACTIVE_STATUSES
from apps.incidents.models import Incident
from apps.telemetry.models import Port

BAD = (NodeState.SUSPECT, NodeState.DRAINED, NodeState.DOWN)

HEADINGS = {"switch": _("Switches"), "pdu": _("PDUs"), "nvlink_domain": _("NVLink domains")}
FABRIC = "fabric"  # the check whose verdicts on ports colour the switches
# A port's verdict, worst first; "unjudged" is a port the fabric check has not judged yet.
PORT_VERDICTS = ("fail", "error", "warn", "pass", "unjudged")
PORT_WORDS = {
    "fail": pgettext_lazy("a port's verdict", "fail"),
    "error": pgettext_lazy("a port's verdict", "not checked"),
    "warn": pgettext_lazy("a port's verdict", "warn"),
    "pass": pgettext_lazy("a port's verdict", "pass"),
    "unjudged": pgettext_lazy("a port's verdict", "not judged yet"),
}
PORT_GLYPHS = {"fail": "✗", "error": "?", "warn": "◐", "pass": "✓", "unjudged": "·"}
# Verdicts whose ports a switch names (host and port), each a link to the node's Ports card.
PORT_NAMED = ("fail", "error", "warn")
PORTS_NAMED_MAX = 12  # ports named per switch; the rest counted


@dataclass
class ComponentRow:
    """One switch, PDU or NVLink domain: its nodes as tiles, how many are out, and the open
    incident that names it."""

    kind: str
    name: str
    tiles: list[SimpleNamespace] = field(default_factory=list)
    incident: Incident | None = None
    # A switch's NIC ports by the fabric check's verdict (PORT_VERDICTS → ports).
    ports: dict[str, int] = field(default_factory=dict)
    # Its failing, unchecked and warning ports (PORT_NAMED): host, port, verdict, message.
    faults: list[SimpleNamespace] = field(default_factory=list)
    _hosts: set[str] = field(default_factory=set, repr=False)

    def add(self, tile: SimpleNamespace) -> None:
        """Put a node behind the component, once."""
        if tile.hostname not in self._hosts:
            self._hosts.add(tile.hostname)
            self.tiles.append(tile)

    @property
    def port_count(self) -> int:
        """NIC ports cabled to the switch (0 for a PDU, an NVLink domain)."""
        return sum(self.ports.values())

    @property
    def port_worst(self) -> str:
        """The worst verdict among its ports ("" with no port)."""
        return next((v for v in PORT_VERDICTS if self.ports.get(v)), "")

    @property
    def port_verdicts(self) -> list[SimpleNamespace]:
        """(verdict, ports, glyph, words) for each verdict its ports have, worst first."""
        return [
            SimpleNamespace(verdict=v, n=n, glyph=PORT_GLYPHS[v], words=PORT_WORDS[v])
            for v in PORT_VERDICTS
            if (n := self.ports.get(v))
        ]

    @property
    def faults_named(self) -> list[SimpleNamespace]:
        """The ports it names, worst first, then by host and port (PORTS_NAMED_MAX)."""
        order = sorted(self.faults, key=lambda f: (PORT_NAMED.index(f.verdict), f.host, f.port))
        return order[:PORTS_NAMED_MAX]

    @property
    def faults_unnamed(self) -> int:
        """Its failing, unchecked or warning ports beyond those named."""
        return max(len(self.faults) - PORTS_NAMED_MAX, 0)

    @property
    def key(self) -> str:
        """`switch:leaf-07`."""
        return blast.component_key(self.kind, self.name)

    @property
    def bad(self) -> int:
        """Nodes suspect, drained or down."""
        return sum(t.state in BAD for t in self.tiles)

    @property
    def states(self) -> list[tuple[str, int]]:
        """(state, nodes) for each state its nodes are in, worst first."""
        counts: dict[str, int] = {}
        for t in self.tiles:
            counts[t.state] = counts.get(t.state, 0) + 1
        order = [s.value for s in (*reversed(BAD), NodeState.MAINTENANCE, NodeState.HEALTHY)]
        return sorted(counts.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 9)

    @property
    def state_words(self) -> list[tuple[str, int, str]]:
        """`states` with each state as a word in the page's language ("2 drained")."""
        labels = {s.value: str(s.label).lower() for s in NodeState}
        return [(state, n, labels.get(state, state)) for state, n in self.states]


def topology(cluster: Cluster) -> dict[str, list[ComponentRow]]:
    """kind → its components, those with an open incident or nodes out first (most first),
    then those with failing or warning ports, then by name; in five queries whatever the
    cluster's size.

    A switch's ports are the NIC ports whose cable ends at it (`Port.switch`, else the node's
    own `switch` when the port reports none); its nodes are those placed behind it and those
    with a port cabled to it. Each port counts by the `fabric` check's verdict on
    `port:HOST/DEVICE/PORT`, or as not judged yet."""
    rows: dict[tuple[str, str], ComponentRow] = {}
    tiles: dict[int, SimpleNamespace] = {}
    node_switch: dict[int, str] = {}
    nodes = Node.objects.filter(cluster=cluster).values_list(
        "pk", "hostname", "state", "state_reason", *blast.KINDS
    )
    for pk, hostname, state, reason, *places in nodes:
        tile = tiles[pk] = SimpleNamespace(hostname=hostname, state=state, reason=reason)
        node_switch[pk] = places[0]
        for kind, name in zip(blast.KINDS, places, strict=True):
            if name:
                rows.setdefault((kind, name), ComponentRow(kind, name)).add(tile)
    verdicts = {
        target: (status, message)
        for target, status, message in CheckResult.objects.filter(
            cluster=cluster, kind=FABRIC, target__startswith="port:"
        ).values_list("target", "status", "message")
    }
    known = {s.value for s in ResultStatus}
    ports = Port.objects.filter(node__cluster=cluster).values_list(
        "node_id", "device", "port", "switch"
    )
    for node_id, device, number, switch in ports.iterator(chunk_size=5000):
        owner = tiles.get(node_id)
        name = switch or node_switch.get(node_id, "")
        if owner is None or not name:
            continue
        row = rows.setdefault(("switch", name), ComponentRow("switch", name))
        row.add(owner)
        status, message = verdicts.get(port_target(owner.hostname, f"{device}/{number}"), ("", ""))
        verdict = status if status in known else "unjudged"
        row.ports[verdict] = row.ports.get(verdict, 0) + 1
        if verdict in PORT_NAMED:
            row.faults.append(
                SimpleNamespace(
                    host=owner.hostname,
                    port=f"{device}/{number}",
                    anchor=f"port-{device}-{number}",
                    verdict=verdict,
                    glyph=PORT_GLYPHS[verdict],
                    words=PORT_WORDS[verdict],
                    message=message,
                )
            )
    for incident in Incident.objects.filter(
        cluster=cluster, status__in=ACTIVE_STATUSES, fingerprint__startswith="blast:"
    ).order_by("-detected_at"):
        split = blast.split_key(str((incident.details or {}).get("component", "")))
        if split and split in rows and rows[split].incident is None:
            rows[split].incident = incident
    out: dict[str, list[ComponentRow]] = {kind: [] for kind in blast.KINDS}
    for row in rows.values():
        out[row.kind].append(row)
    for kind_rows in out.values():
        kind_rows.sort(
            key=lambda r: (
                r.incident is None,
                -r.bad,
                -r.ports.get("fail", 0),
                -r.ports.get("warn", 0),
                r.name,
            )
        )
    return out


def cluster_link_words(cluster: Cluster | None) -> str:
    """What the cluster's GPU-to-GPU link domains are called: its GPUs' vendors' words
    (`NVLink`, `XGMI`, `NVLink / XGMI` for a mixed cluster), NVLink when none is known
    (`cluster_gpu_kinds`: remembered a few minutes)."""
    if cluster is None:
        return LINK_WORDS["nvidia"]
    rows = cluster_gpu_kinds(cluster)
    found = {vendor_of(v, m) for v, m in rows}
    vendors = [v for v in VENDORS if v in found]
    return " / ".join(link_word(v) for v in vendors) or LINK_WORDS["nvidia"]


def _section(kind: str, label: object, rows: list[ComponentRow], selected: str) -> SimpleNamespace:
    """A kind's section: the components to look at drawn in full, the quiet ones (but the
    one the address selects) as one closed line whose data the page's script draws."""
    calm: list[tuple[ComponentRow, str]] = []
    shown: list[ComponentRow] = []
    for row in rows:
        hosts = None
        if quiet(row) and row.key != selected:
            hosts = node_grid.hostlist([t.hostname for t in row.tiles])
        if hosts is None:
            shown.append(row)
        else:
            calm.append((row, hosts))
    return SimpleNamespace(
        kind=kind,
        label=label,
        total=len(rows),
        rows=shown,
        quiet=len(calm),
        quiet_id=f"quiet-{kind}",
        quiet_json=node_grid.json_script(quiet_data(kind, calm), f"quiet-{kind}") if calm else "",
    )


def quiet(row: ComponentRow) -> bool:
    """Whether the component has nothing to look at: no open incident, every node healthy
    with no reason given (a tile the page's script draws: apps/common/node_grid.py), no port
    failing, unchecked or warning."""
    return (
        row.incident is None
        and all(node_grid.plain(t) for t in row.tiles)
        and row.port_worst not in PORT_NAMED
    )


def quiet_data(kind: str, rows: list[tuple[ComponentRow, str]]) -> dict:
    """The quiet components of a kind as the page's script draws them when their line is
    opened (docs/pages.md, Node grids): each its name, its nodes as a hostlist (every tile
    a plain one), and the index of its head — the class of its name and its line of
    counts, rendered here once for each different line."""
    heads: dict[tuple[int, ...], int] = {}
    rendered: list[list[str]] = []
    out: list[list[object]] = []
    for row, hosts in rows:
        # a quiet component's line says only how many nodes and ports, by verdict
        seen = (len(row.tiles), *(row.ports.get(v, 0) for v in PORT_VERDICTS))
        if seen not in heads:
            heads[seen] = len(rendered)
            cls = "mono"
            if row.port_count:
                cls += " port-worst"
                cls += f" res-{row.port_worst}" if row.port_worst != "unjudged" else ""
            line = render_to_string("health/_component_line.html", {"r": row}).strip()
            rendered.append([cls, line])
        out.append([row.name, hosts, heads[seen]])
    return {"kind": kind, "heads": rendered, "rows": out}


@role_required()
def topology_page(request: HttpRequest) -> HttpResponse:
    """`/topology/?cluster=&component=`: which component the failing nodes share."""
    cluster, names = page_cluster(request)
    kinds = topology(cluster) if cluster else {}
    words = cluster_link_words(cluster)
    headings = {**HEADINGS, "nvlink_domain": _("%(links)s domains") % {"links": words}}
    selected = request.GET.get("component", "")
    return render(
        request,
        "health/topology.html",
        {
            "cluster": cluster,
            "clusters": names,
            "sections": [
                _section(kind, headings[kind], kinds.get(kind, []), selected)
                for kind in blast.KINDS
            ],
            "selected": selected,
            "link_words": words,
            "states": list(NodeState),
            "placed": sum(len(rows) for rows in kinds.values()),
            # the ports' legend only where some switch has ports cabled to it
            "port_verdicts": [
                SimpleNamespace(verdict=v, glyph=PORT_GLYPHS[v], words=PORT_WORDS[v])
                for v in PORT_VERDICTS
            ]
            if any(row.port_count for rows in kinds.values() for row in rows)
            else [],
        },
    )
