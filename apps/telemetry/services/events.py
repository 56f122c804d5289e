"""Event intake (`ingest/events/`, docs/xid.md): XIDs from nodes' kernel logs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from apps.common.bulk import insert_ignore
from apps.common.errors import BatchError
from apps.common.limits import EVENTS_PER_NODE_PER_HOUR
from apps.fleet.models import GPU, Node
from apps.telemetry.intake import EventIn
from apps.telemetry.models import TelemetryEvent


@dataclass(frozen=True)
class EventIngestResult:
    """What a batch did: events accepted, and how many of them were new (`events`)."""

    accepted: int
    events: int


@transaction.atomic
def events_ingest(
    *, events: Sequence[EventIn], now: dt.datetime | None = None
) -> EventIngestResult:
    """Store a validated batch of kernel-log events, all or nothing.

    An event is identified by (node, PCI address or GPU, code, ts): re-sending a batch stores
    nothing twice (a unique constraint; conflicting rows are skipped). An event that names
    only a PCI address gets the GPU the node's telemetry knows by that address, else `gpu` is
    None until it does. Unknown nodes and GPU indexes reject the batch, naming the event.
    """
    now = now or timezone.now()
    node_ids = dict(
        Node.objects.filter(hostname__in={e.node for e in events}).values_list("hostname", "pk")
    )
    indexes: set[tuple[int, int]] = set()
    by_bus: dict[tuple[int, str], int] = {}
    for owner, index, pci_bus in GPU.objects.filter(node_id__in=node_ids.values()).values_list(
        "node_id", "index", "pci_bus"
    ):
        indexes.add((owner, index))
        if pci_bus:
            by_bus[(owner, pci_bus)] = index
    errors: dict[str, list[str]] = {}
    rows = []
    for i, event in enumerate(events):
        node_id = node_ids.get(event.node)
        if node_id is None:
            errors[f"events[{i}].node"] = [f"unknown node {event.node!r}; register it first"]
        elif event.gpu is not None and (node_id, event.gpu) not in indexes:
            errors[f"events[{i}].gpu"] = [f"node {event.node} has no GPU {event.gpu}"]
        elif not errors:
            gpu = event.gpu if event.gpu is not None else by_bus.get((node_id, event.pci_bus))
            rows.append(
                (node_id, gpu, event.ts, event.kind, event.value, None, event.code)
                + (event.pci_bus, event.message, TelemetryEvent.Source.KERNEL.value, now)
                + (event.subject,)
            )
        if len(errors) >= 100:
            break
    if errors:
        raise BatchError(errors)
    columns = (*TelemetryEvent.INSERT_COLUMNS, "subject")
    stored = insert_ignore(TelemetryEvent._meta.db_table, columns, rows)
    if stored:
        _hourly_bound({row[0] for row in rows}, node_ids, now)
    Node.objects.filter(pk__in=sorted(set(node_ids.values()))).update(last_seen_at=now)
    return EventIngestResult(len(events), stored)


def _hourly_bound(nodes: set[int], node_ids: dict[str, int], now: dt.datetime) -> None:
    """At most EVENTS_PER_NODE_PER_HOUR kernel events stored per node in any hour (as new
    nodes per cluster per hour, docs/operations.md, Limits): counted with the batch's new
    rows (a re-sent batch adds none), and a batch that passes it is a BatchError naming the
    node and the bound, its rows undone with the batch's transaction."""
    stored = dict(
        TelemetryEvent.objects.filter(
            node_id__in=sorted(nodes),
            source=TelemetryEvent.Source.KERNEL,
            recorded_at__gte=now - dt.timedelta(hours=1),
        )
        .order_by()
        .values("node_id")
        .annotate(n=Count("id"))
        .values_list("node_id", "n")
    )
    names = {pk: name for name, pk in node_ids.items()}
    over = sorted(names[pk] for pk, n in stored.items() if n > EVENTS_PER_NODE_PER_HOUR)
    if over:
        raise BatchError(
            {
                "events": [
                    f"node {', '.join(over[:20])}: past the bound of "
                    f"{EVENTS_PER_NODE_PER_HOUR:,} kernel events per node per hour"
                ]
            }
        )
