"""Writes for clusters, node registration, state changes, heartbeats."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.common.bulk import among, update_many
from apps.common.errors import BatchError, OutOfScope
from apps.common.limits import NEW_NODES, NEW_NODES_PER_HOUR, TOPOLOGY_NODES
from apps.common.timeutil import FUTURE_SLACK
from apps.fleet import transitions
from apps.fleet.addresses import addresses_clean
from apps.fleet.choices import NodeState, StateSource
from apps.fleet.models import GPU, Cluster, Node, NodeStateChange
from apps.fleet.scope import require_nodes


def cluster_create(
    *,
    name: str,
    gpu_model: str,
    peak_tflops_per_gpu: float,
    gpus_per_node: int,
    simulated: bool = False,
    peak_tflops_by_model: dict[str, float] | None = None,
) -> Cluster:
    """Create a cluster."""
    return Cluster.objects.create(
        name=name,
        gpu_model=gpu_model,
        peak_tflops_per_gpu=peak_tflops_per_gpu,
        peak_tflops_by_model=peak_tflops_by_model or {},
        gpus_per_node=gpus_per_node,
        simulated=simulated,
    )


# Where a node sits (docs/checks.md, Blast radius): what its failures may share with its
# neighbours'.
TOPOLOGY = ("switch", "pdu", "nvlink_domain")
PLACEMENT = ("rack", *TOPOLOGY)
PLACE_LENGTH = 64


@dataclass(frozen=True)
class NodeSpec:
    """What registering a node needs; used for one node or thousands at once."""

    hostname: str
    rack: str = ""
    switch: str = ""
    pdu: str = ""
    nvlink_domain: str = ""
    gpu_count: int | None = None
    exporter_url: str = ""
    in_service_at: dt.datetime | None = None
    addresses: tuple[str, ...] = ()


def _addresses(specs: Sequence[NodeSpec]) -> dict[str, list[str]]:
    """Each spec's addresses in canonical form; a ValidationError naming `addresses` for a
    bad one or one that another node is already known by (placement must be unambiguous)."""
    wanted: dict[str, list[str]] = {}
    owner: dict[str, str] = {}
    for spec in specs:
        if not spec.addresses:
            continue
        try:
            wanted[spec.hostname] = addresses_clean(list(spec.addresses))
        except ValueError as exc:
            raise ValidationError({"addresses": [str(exc)]}) from exc
        for address in wanted[spec.hostname]:
            if owner.setdefault(address, spec.hostname) != spec.hostname:
                raise ValidationError(
                    {"addresses": [f"{address} is given for {owner[address]} and {spec.hostname}"]}
                )
    if owner:
        others = Node.objects.exclude(addresses=[]).exclude(hostname__in=list(wanted))
        for hostname, known in others.values_list("hostname", "addresses"):
            for address in set(known) & set(owner):
                raise ValidationError({"addresses": [f"{address} is already {hostname}'s"]})
    return wanted


def node_register(*, cluster: Cluster, spec: NodeSpec) -> tuple[Node, bool]:
    """Register a node (and its GPUs); re-registering in the same cluster updates it.

    Returns (node, created). A hostname already in another cluster is a ValidationError.
    """
    existing = Node.objects.filter(hostname=spec.hostname).select_related("cluster").first()
    if existing is not None:
        if existing.cluster_id != cluster.pk:
            raise ValidationError(
                {"hostname": [f"{spec.hostname} is registered in cluster {existing.cluster.name}"]}
            )
        changed = []
        for field in ("rack", *TOPOLOGY, "exporter_url"):
            value = getattr(spec, field)
            if value and value != getattr(existing, field):
                setattr(existing, field, value)
                changed.append(field)
        addresses = _addresses([spec]).get(spec.hostname)
        if addresses and addresses != existing.addresses:
            existing.addresses = addresses
            changed.append("addresses")
        if changed:
            existing.save(update_fields=changed)
        return existing, False
    return nodes_register(cluster=cluster, specs=[spec])[0], True


# `by` of the first history entry of a node an agent's intake registered: what the hourly
# bound counts (a person's registrations carry none and are not counted).
INTAKE_BY = "intake"


@transaction.atomic
def nodes_claim(
    *, cluster: Cluster, hostnames: Collection[str], intake: str, field: str = "nodes"
) -> dict[str, int]:
    """hostname → node id for every name an agent's intake (`intake`: `slurm`, `telemetry`)
    names in `cluster`, registering the new ones — the one rule every intake that creates
    nodes goes through (docs/operations.md, Limits):

    - a hostname of another cluster is never claimed: OutOfScope (a 403) naming it, and
      that cluster keeps its node;
    - at most `NEW_NODES` new nodes per request, and at most `NEW_NODES_PER_HOUR` new nodes
      per cluster per hour from intakes: a BatchError naming `field` and the bound.

    Both are checked before anything is written. The cluster's row is locked while it
    counts and registers, so concurrent intakes cannot both pass the hourly bound."""
    wanted = sorted(set(hostnames))
    if not wanted:
        return {}
    known = {
        h: (pk, cid)
        for h, pk, cid in among(Node.objects.all(), "hostname", wanted).values_list(
            "hostname", "pk", "cluster_id"
        )
    }
    elsewhere = sorted(h for h, (_, cid) in known.items() if cid != cluster.pk)
    if elsewhere:
        shown = ", ".join(elsewhere[:20]) + (
            f" (+{len(elsewhere) - 20} more)" if len(elsewhere) > 20 else ""
        )
        raise OutOfScope(
            f"{'node' if len(elsewhere) == 1 else 'nodes'} {shown}: not cluster "
            f"{cluster.name}'s to claim; the {intake} intake never takes another cluster's node"
        )
    ids = {h: pk for h, (pk, _) in known.items()}
    new = [h for h in wanted if h not in known]
    if not new:
        return ids
    if len(new) > NEW_NODES:
        raise BatchError(
            {
                field: [
                    f"names {len(new):,} new nodes: past the bound of {NEW_NODES:,} new nodes "
                    "per request (register them in smaller requests)"
                ]
            }
        )
    Cluster.objects.select_for_update(no_key=True).filter(pk=cluster.pk).exists()
    made = NodeStateChange.objects.filter(
        node__cluster=cluster,
        by=INTAKE_BY,
        recorded_at__gte=timezone.now() - dt.timedelta(hours=1),
    ).count()
    if made + len(new) > NEW_NODES_PER_HOUR:
        raise BatchError(
            {
                field: [
                    f"names {len(new):,} new nodes: past the bound of {NEW_NODES_PER_HOUR:,} "
                    "new nodes per cluster per hour from agents' intakes "
                    f"({made:,} made in the last hour; a person can register more)"
                ]
            }
        )
    try:
        registered = nodes_register(
            cluster=cluster, specs=[NodeSpec(hostname=h) for h in new], by=INTAKE_BY
        )
    except ValidationError as exc:  # registered meanwhile in another cluster
        raise OutOfScope(f"nodes: {'; '.join(exc.messages)}") from exc
    ids.update((node.hostname, node.pk) for node in registered)
    return ids


@transaction.atomic
def nodes_register(*, cluster: Cluster, specs: Sequence[NodeSpec], by: str = "") -> list[Node]:
    """Register new nodes in bulk: nodes, their GPUs and the first state-history entry
    (`by`: who registered them; `INTAKE_BY` for an agent's intake, via `nodes_claim`).

    Returns the specs' nodes in order. One registered meanwhile by a concurrent request
    (two Slurm intakes naming the same new node) is not an error: it is registered once,
    by whichever commits first, and returned as it is; one registered in another cluster
    is a ValidationError naming `hostname`.
    """
    now = timezone.now()
    addresses = _addresses(specs)
    wanted = {spec.hostname: spec for spec in specs}
    for _ in range(3):
        nodes = [
            Node(
                cluster=cluster,
                hostname=spec.hostname,
                rack=spec.rack,
                switch=spec.switch,
                pdu=spec.pdu,
                nvlink_domain=spec.nvlink_domain,
                gpu_count=spec.gpu_count if spec.gpu_count is not None else cluster.gpus_per_node,
                exporter_url=spec.exporter_url,
                addresses=addresses.get(spec.hostname, []),
                in_service_at=spec.in_service_at or now,
                state=NodeState.HEALTHY,
                state_changed_at=spec.in_service_at or now,
            )
            for spec in wanted.values()
        ]
        try:
            with transaction.atomic():  # a savepoint: a lost race leaves the rest intact
                Node.objects.bulk_create(nodes, batch_size=1000)
            break
        except IntegrityError:
            # Another request inserted some of them and committed (PostgreSQL waited for
            # it): take those as they are and insert the others.
            for hostname in Node.objects.filter(hostname__in=list(wanted)).values_list(
                "hostname", flat=True
            ):
                del wanted[hostname]
    else:
        raise IntegrityError("nodes kept colliding with concurrent registrations")
    _nodes_furnish(cluster, nodes, by)
    mine = {node.hostname: node for node in nodes}
    others = {}
    if len(mine) < len(specs):
        others = {
            node.hostname: node
            for node in Node.objects.filter(hostname__in=[s.hostname for s in specs]).exclude(
                hostname__in=list(mine)
            )
        }
        elsewhere = sorted(h for h, node in others.items() if node.cluster_id != cluster.pk)
        if elsewhere:
            raise ValidationError(
                {"hostname": [f"{', '.join(elsewhere[:20])}: registered in another cluster"]}
            )
    return [mine.get(spec.hostname) or others[spec.hostname] for spec in specs]


def _nodes_furnish(cluster: Cluster, nodes: Sequence[Node], by: str = "") -> None:
    """Give just-inserted nodes their ids (SQLite before 3.35 returns none), GPUs and first
    state-history entry."""
    if not nodes:
        return
    if any(node.pk is None for node in nodes):
        by_host = dict(
            Node.objects.filter(hostname__in=[n.hostname for n in nodes]).values_list(
                "hostname", "pk"
            )
        )
        for node in nodes:
            node.pk = by_host[node.hostname]
    GPU.objects.bulk_create(
        [
            GPU(node=node, index=i, model=cluster.model_of(""))
            for node in nodes
            for i in range(node.gpu_count)
        ],
        batch_size=2000,
    )
    NodeStateChange.objects.bulk_create(
        [
            NodeStateChange(
                node=node,
                state=NodeState.HEALTHY,
                reason="in service",
                at=node.in_service_at,
                source=StateSource.IMPORT,
                by=by,
            )
            for node in nodes
        ],
        batch_size=1000,
    )


@transaction.atomic
def node_set_state(
    *,
    node: Node,
    state: str,
    reason: str,
    at: dt.datetime | None = None,
    source: str = StateSource.USER,
    by: str = "",
) -> NodeStateChange:
    """Record a state change at `at` (default now; may be back-filled).

    The node's current state becomes its newest history entry, so a back-filled change
    older than the newest one only adds history.
    """
    now = timezone.now()
    at = at or now
    if state not in NodeState.values:
        raise ValidationError({"state": [f"unknown state {state!r}; one of {NodeState.values}"]})
    if at < node.in_service_at:
        raise ValidationError({"at": ["is before the node's in_service_at"]})
    if at > now + FUTURE_SLACK:
        raise ValidationError({"at": ["is in the future"]})
    # The row lock orders concurrent changes of one node, so each transition is queued once.
    # FOR NO KEY UPDATE: an incident linking the node meanwhile (a key share) is not held up
    # (docs/architecture.md, Locks).
    before = (
        Node.objects.select_for_update(no_key=True)
        .filter(pk=node.pk)
        .values_list("state", flat=True)
        .get()
    )
    change = NodeStateChange.objects.create(
        node=node, state=state, reason=reason, at=at, source=source, by=by
    )
    newest = NodeStateChange.objects.filter(node=node).order_by("-at", "-id").first()
    assert newest is not None
    if newest.pk == change.pk:  # a back-filled change only adds history: nothing to send
        for follower in transitions.followers():  # the scheduler's outbox, in this transaction
            follower(node=node, change=change, before=before, after=state)
    Node.objects.filter(pk=node.pk).update(
        state=newest.state, state_reason=newest.reason, state_changed_at=newest.at
    )
    node.state, node.state_reason, node.state_changed_at = newest.state, newest.reason, newest.at
    return change


def node_heartbeat(*, node: Node, now: dt.datetime | None = None) -> None:
    """A heartbeat: the server's receive time is what the heartbeat check uses."""
    now = now or timezone.now()
    Node.objects.filter(pk=node.pk).update(last_heartbeat_at=now, last_seen_at=now)


def nodes_seen(*, node_ids: Sequence[int], now: dt.datetime | None = None) -> None:
    """Mark nodes as heard from (telemetry or metrics arrived) at the server's time."""
    if node_ids:
        Node.objects.filter(pk__in=list(node_ids)).update(last_seen_at=now or timezone.now())


def nodes_touch_bulk(*, rows: Sequence[tuple[int, dt.datetime | None, dt.datetime | None]]) -> None:
    """Set nodes' last heartbeat and last seen times: rows of (node_id, heartbeat, seen)."""
    update_many(Node._meta.db_table, ("id",), ("last_heartbeat_at", "last_seen_at"), rows)


def _place_value(value: object) -> str:
    """A rack, switch, PDU or NVLink domain name: a string of at most 64 printable
    characters (surrounding spaces dropped); null or "" clears it."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError("must be a string or null")
    value = value.strip()
    if len(value) > PLACE_LENGTH:
        raise ValueError(f"must be at most {PLACE_LENGTH} characters")
    if not value.isprintable():
        raise ValueError("must be printable characters")
    return value


@transaction.atomic
def nodes_topology_set(*, items: Sequence[object], user: object = None) -> dict[str, int]:
    """Set where nodes sit (`POST nodes/topology/`): each item `{hostname, rack?, switch?,
    pdu?, nvlink_domain?}`; a field left out stays, null or "" clears it. All or nothing: a
    BatchError naming `nodes[i].field` for an unknown node or a bad value, an OutOfScope
    when `user` is an agent scoped away from one of the nodes; nothing written either way.
    Returns `{nodes, changed}`."""
    if len(items) > TOPOLOGY_NODES:
        raise BatchError({"nodes": [f"at most {TOPOLOGY_NODES} nodes per request"]})
    errors: dict[str, list[str]] = {}
    wanted: dict[str, tuple[int, dict[str, str]]] = {}
    for i, item in enumerate(items):
        if len(errors) >= 100:
            break
        if not isinstance(item, dict):
            errors[f"nodes[{i}]"] = ["must be an object {hostname, rack?, switch?, …}"]
            continue
        extra = sorted(set(item) - {"hostname", *PLACEMENT})
        if extra:
            errors[f"nodes[{i}].{extra[0]}"] = [
                f"unknown field; one of hostname, {', '.join(PLACEMENT)}"
            ]
            continue
        hostname = item.get("hostname")
        if not isinstance(hostname, str) or not hostname:
            errors[f"nodes[{i}].hostname"] = ["required: the node's hostname"]
            continue
        if hostname in wanted:
            errors[f"nodes[{i}].hostname"] = [
                f"{hostname} is given twice (nodes[{wanted[hostname][0]}])"
            ]
            continue
        values: dict[str, str] = {}
        for field in PLACEMENT:
            if field in item:
                try:
                    values[field] = _place_value(item[field])
                except ValueError as exc:
                    errors[f"nodes[{i}].{field}"] = [str(exc)]
        wanted[hostname] = (i, values)
    if not errors:
        require_nodes(user, list(wanted))
    current = {
        row[0]: row
        for row in among(Node.objects.all(), "hostname", list(wanted)).values_list(
            "hostname", "pk", *PLACEMENT
        )
    }
    for hostname, (i, _) in wanted.items():
        if len(errors) >= 100:
            break
        if hostname not in current:
            errors[f"nodes[{i}].hostname"] = [f"unknown node {hostname!r}; register it first"]
    if errors:
        raise BatchError(errors)
    rows = []
    for hostname, (_, values) in wanted.items():
        _, pk, *old = current[hostname]
        new = [values.get(field, old[k]) for k, field in enumerate(PLACEMENT)]
        if new != old:
            rows.append((pk, *new))
    update_many(Node._meta.db_table, ("id",), PLACEMENT, rows)
    return {"nodes": len(wanted), "changed": len(rows)}
