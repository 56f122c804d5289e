"""A cluster's live sync (docs/slurm.md, The live sync): node states and jobs in, then the
cluster's due actuations out (`actuation.actuations_deliver`)."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Q
from django.utils import timezone

from apps.common.bulk import upsert_merge
from apps.common.limits import NEW_NODES
from apps.fleet.choices import OUT_OF_SERVICE, NodeState, StateSource
from apps.fleet.models import Cluster, Node
from apps.fleet.services import NodeSpec, node_set_state, nodes_register
from apps.scheduler.connection import (
    SchedulerConnection,
    SchedulerRefused,
    SchedulerUnavailable,
    connection_for,
)
from apps.scheduler.models import SchedulerNode, SchedulerSync
from apps.scheduler.services.actuation import actuations_deliver, is_kuae_reason
from apps.scheduler.services.intake import slurm_ingest
from apps.scheduler.slurm_nodes import SlurmFormatError, SlurmNode, parse_nodes

log = logging.getLogger(__name__)

FIRST_LOOKBACK = dt.timedelta(days=1)  # the first sync reads jobs that ended this far back
OVERLAP = dt.timedelta(minutes=2)  # re-read a little: accounting lags the controller
LEASE = dt.timedelta(minutes=5)  # a sync started longer ago than this is taken as dead


@dataclass
class SyncReport:
    """What one sync did."""

    ok: bool
    error: str = ""
    counts: dict[str, int] = field(default_factory=dict)


def cluster_sync(
    *, cluster: Cluster, conn: SchedulerConnection | None = None, now: dt.datetime | None = None
) -> SyncReport:
    """Read the scheduler's nodes and jobs into KUAE, then deliver the cluster's pending
    actuations. A failure is recorded on the cluster's sync row (shown on its page), never
    swallowed; what was stored before the failure stays."""
    conn = conn or connection_for(cluster)
    now = now or timezone.now()
    status, _ = SchedulerSync.objects.get_or_create(cluster=cluster)
    if conn is None:
        return SyncReport(ok=False, error="no scheduler connection")
    running = status.started_at and (
        status.finished_at is None or status.finished_at < status.started_at
    )
    if running and status.started_at and now - status.started_at < LEASE:
        return SyncReport(ok=False, error="a sync of this cluster is still running")
    began = time.perf_counter()
    SchedulerSync.objects.filter(pk=status.pk).update(started_at=now)
    counts: dict[str, int] = {}
    try:
        nodes = parse_nodes(conn.nodes())
        counts.update(nodes_mirror(cluster=cluster, nodes=nodes, now=now))
        for key, value in slurm_ingest(
            cluster_name=cluster.name, payload=conn.jobs_active()
        ).items():
            counts[f"active_{key}"] = value
        since = (status.ended_since or now - FIRST_LOOKBACK) - OVERLAP
        for key, value in slurm_ingest(
            cluster_name=cluster.name, payload=conn.jobs_since(since)
        ).items():
            counts[f"ended_{key}"] = value
        counts.update(
            {
                f"actuations_{k}": v
                for k, v in actuations_deliver(cluster=cluster, conn=conn).items()
            }
        )
    except (SchedulerUnavailable, SchedulerRefused, SlurmFormatError) as exc:
        return _sync_failed(status, f"{conn.describe()}: {exc}", began)
    except Exception as exc:  # a record the intake refused (BatchError), a bug: shown, not lost
        errors = getattr(exc, "errors", None)
        detail = f"{errors}" if errors else f"{type(exc).__name__}: {exc}"
        log.exception("slurm sync of %s failed", cluster.name)
        return _sync_failed(status, f"{conn.describe()}: {detail}", began)
    SchedulerSync.objects.filter(pk=status.pk).update(
        finished_at=timezone.now(),
        ok=True,
        error="",
        last_ok_at=now,
        failures=0,
        ended_since=now,
        counts=counts,
        duration_s=time.perf_counter() - began,
    )
    return SyncReport(ok=True, counts=counts)


def _sync_failed(status: SchedulerSync, error: str, began: float) -> SyncReport:
    log.warning("scheduler sync failed: %s", error)
    SchedulerSync.objects.filter(pk=status.pk).update(
        finished_at=timezone.now(),
        ok=False,
        error=error[:500],
        failures=status.failures + 1,
        duration_s=time.perf_counter() - began,
    )
    return SyncReport(ok=False, error=error)


def nodes_mirror(
    *, cluster: Cluster, nodes: Sequence[SlurmNode], now: dt.datetime
) -> dict[str, int]:
    """Keep Slurm's state and reason of each node (SchedulerNode); register nodes Slurm has
    and KUAE does not; and turn a new drain or down that KUAE did not write into a KUAE state
    change (source `slurm`, Slurm's reason) — unless the node is already out of service or
    in maintenance."""
    by_name = {n.name: n for n in nodes}  # a node listed once per partition is kept once
    before = {
        host: (pk, f"{label or ''}|{reason or ''}")  # never synced: no row, as "|"
        for host, pk, label, reason in Node.objects.filter(
            cluster=cluster, hostname__in=list(by_name)
        ).values_list("hostname", "pk", "sched__state", "sched__reason")
    }
    known = {host: pk for host, (pk, _) in before.items()}
    new = [n for name, n in by_name.items() if name not in known]
    elsewhere = set(
        Node.objects.filter(hostname__in=[n.name for n in new]).values_list("hostname", flat=True)
    )
    new = [n for n in new if n.name not in elsewhere]
    for i in range(0, len(new), NEW_NODES):
        # in service from this sync's time, so a drain seen in the same sync can be recorded
        specs = [
            NodeSpec(hostname=n.name, gpu_count=n.gpus, in_service_at=now)
            for n in new[i : i + NEW_NODES]
        ]
        for node in nodes_register(cluster=cluster, specs=specs):
            known[node.hostname] = node.pk
    upsert_merge(
        SchedulerNode._meta.db_table,
        ("node_id",),
        dict.fromkeys(("state", "reason", "synced_at"), "replace"),
        [
            (known[n.name], n.label[:64], _reason_text(n)[:300], now)
            for n in by_name.values()
            if n.name in known
        ],
    )
    mirrored = 0
    # A drain or down a person (or slurmctld) set, seen for the first time: mirrored once,
    # so an operator who returns the node in KUAE is not overruled at every sync while the
    # same Slurm drain stands (both states stay on the node page).
    outside = [
        n
        for n in nodes
        if n.name in known
        and n.kuae_state
        and not is_kuae_reason(n.reason)
        and before.get(n.name, (0, ""))[1] != f"{n.label[:64]}|{_reason_text(n)[:300]}"
    ]
    if outside:
        rows = Node.objects.filter(pk__in=[known[n.name] for n in outside]).exclude(
            state__in=[*OUT_OF_SERVICE, NodeState.MAINTENANCE]
        )
        current = {row.hostname: row for row in rows}
        for n in outside:
            target = current.get(n.name)
            if target is None:
                continue
            node_set_state(
                node=target,
                state=n.kuae_state or NodeState.DRAINED,
                reason=f"Slurm {n.label}: {n.reason or 'no reason given'}",
                at=now,
                source=StateSource.SLURM,
                by=f"slurm:{n.reason_by}" if n.reason_by else "slurm",
            )
            mirrored += 1
    return {"nodes": len(nodes), "nodes_new": len(new), "nodes_mirrored": mirrored}


def _reason_text(node: SlurmNode) -> str:
    if not node.reason:
        return ""
    return f"{node.reason} ({node.reason_by})" if node.reason_by else node.reason


def clusters_to_sync() -> list[int]:
    """Clusters that name a scheduler connection."""
    return list(Cluster.objects.filter(~Q(slurm_kind="")).values_list("pk", flat=True))
