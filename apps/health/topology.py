"""The topology page (docs/checks.md, Blast radius): a cluster's switches, PDUs and NVLink domains
with their nodes coloured by state, the components with failing nodes first, and the component
an open blast-radius incident names highlighted."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from apps.accounts.permissions import role_required
from apps.fleet.choices import NodeState
from apps.fleet.models import Cluster, Node
from apps.health import blast
from apps.incidents.choices import ACTIVE_STATUSES
from apps.incidents.models import Incident

BAD = (NodeState.SUSPECT, NodeState.DRAINED, NodeState.DOWN)

HEADINGS = {"switch": "Switches", "pdu": "PDUs", "nvlink_domain": "NVLink domains"}


@dataclass
class ComponentRow:
    """One switch, PDU or NVLink domain: its nodes as tiles, how many are out, and the open
    incident that names it."""

    kind: str
    name: str
    tiles: list[SimpleNamespace] = field(default_factory=list)
    incident: Incident | None = None

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


def topology(cluster: Cluster) -> dict[str, list[ComponentRow]]:
    """kind → its components, those with an open incident or nodes out first (most first),
    then by name; in three queries."""
    rows: dict[tuple[str, str], ComponentRow] = {}
    nodes = (
        Node.objects.filter(cluster=cluster)
        .exclude(switch="", pdu="", nvlink_domain="")
        .values_list("hostname", "state", "state_reason", *blast.KINDS)
    )
    for hostname, state, reason, *places in nodes:
        tile = SimpleNamespace(hostname=hostname, state=state, reason=reason)
        for kind, name in zip(blast.KINDS, places, strict=True):
            if name:
                rows.setdefault((kind, name), ComponentRow(kind, name)).tiles.append(tile)
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
        kind_rows.sort(key=lambda r: (r.incident is None, -r.bad, r.name))
    return out


@role_required()
def topology_page(request: HttpRequest) -> HttpResponse:
    """`/topology/?cluster=&component=`: which component the failing nodes share."""
    name = request.GET.get("cluster")
    cluster = (
        Cluster.objects.filter(name=name).first()
        if name
        else Cluster.objects.order_by("name").first()
    )
    if name and cluster is None:
        raise Http404(f"no cluster {name}")
    kinds = topology(cluster) if cluster else {}
    return render(
        request,
        "health/topology.html",
        {
            "cluster": cluster,
            "clusters": list(Cluster.objects.values_list("name", flat=True)),
            "sections": [(kind, HEADINGS[kind], kinds.get(kind, [])) for kind in blast.KINDS],
            "selected": request.GET.get("component", ""),
            "states": list(NodeState),
            "placed": sum(len(rows) for rows in kinds.values()),
        },
    )
