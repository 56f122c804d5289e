"""`gpu_errors`: ECC, XIDs, row remaps, a GPU that fell off, link errors
(docs/checks.md, `gpu_errors`; docs/xid.md)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from dataclasses import dataclass

from django.db.models import Case, CharField, Count, Exists, F, OuterRef, Q, Value, When
from django.db.models.functions import Concat
from django.utils.translation import gettext_lazy as _

from apps.fleet.models import Cluster, Node
from apps.health import inputs
from apps.health.checks.base import CheckSpec, Context
from apps.health.choices import ResultStatus
from apps.health.detectors import Finding, GpuEvent, NodeGpus, gpu_errors
from apps.health.detectors.findings import GPU
from apps.health.detectors.gpu_errors import (
    EVERY_GPU,
    MTHREADS_DRIVER,
    NOTHING_NEW,
    blinding_sources,
)
from apps.health.inputs import IN_SERVICE
from apps.health.models import CheckResult
from apps.health.thresholds import Shared, threshold
from apps.incidents.choices import Category
from apps.telemetry.models import TelemetryEvent
from apps.telemetry.monitored import Needed
from apps.telemetry.names import COUNTERS

KIND, LABEL = "gpu_errors", _("GPU errors (ECC/XID)")
OFF_BY_DEFAULT = _("the exporter's counters file omits it (dcgm-exporter's default leaves it off)")
NOT_IN_FILE = _("the exporter's counters file omits it, or the GPU or its source cannot report it")


@dataclass(frozen=True)
class GpuErrorsLimits(Shared):
    """The GPU-errors check's thresholds (docs/checks.md, Thresholds), besides those every check
    shares."""

    link_errors_growth: int = threshold(
        100, _("NVLink CRC or PCIe replay growth per run over"), "", check=KIND, hi=10**9
    )
    gpu_missing_runs: int = threshold(
        2, _("A missing GPU fails after this many runs"), _("runs"), check=KIND, lo=1, hi=1_000
    )


def gpu_events(cluster: Cluster, since: dt.datetime) -> list[GpuEvent]:
    """XID/ECC/link events of nodes in service that arrived after `since` (server time)."""
    return [
        GpuEvent(hostname, gpu, at, kind, value, previous, pci_bus)
        for hostname, gpu, at, kind, value, previous, pci_bus in TelemetryEvent.objects.filter(
            node__cluster=cluster, node__state__in=IN_SERVICE, recorded_at__gt=since
        ).values_list("node__hostname", "gpu", "at", "kind", "value", "previous", "pci_bus")
    ]


def node_gpus(cluster: Cluster, fresh_after: dt.datetime) -> list[NodeGpus]:
    """Each node in service: its GPU count and how many of its GPUs reported since
    `fresh_after` (one grouped query)."""
    return [
        NodeGpus(hostname, gpu_count, reporting)
        for hostname, gpu_count, reporting in Node.objects.filter(
            cluster=cluster, state__in=IN_SERVICE
        )
        .annotate(reporting=Count("gpus", filter=Q(gpus__updated_at__gte=fresh_after)))
        .values_list("hostname", "gpu_count", "reporting")
    ]


def node_gpus_candidates(
    cluster: Cluster, fresh_after: dt.datetime, skip_hosts: Collection[str] = ()
) -> inputs.NodeCandidates:
    """`node_gpus` of the nodes to judge: not those with every GPU reporting (or none: the
    heartbeat check's) whose stored result is the pass "every GPU reporting" — they would
    pass again unchanged, and are counted (those on `skip_hosts` not)."""
    stored = CheckResult.objects.filter(
        cluster=cluster,
        kind=KIND,
        target=Concat(Value("node:"), OuterRef("hostname"), output_field=CharField()),
        status=ResultStatus.PASS,
        message=EVERY_GPU,
    )
    nodes = (
        Node.objects.filter(cluster=cluster, state__in=IN_SERVICE)
        .annotate(reporting=Count("gpus", filter=Q(gpus__updated_at__gte=fresh_after)))
        .annotate(
            unchanged=Case(
                When(
                    (Q(reporting=0) | Q(reporting__gte=F("gpu_count"))) & Q(Exists(stored)),
                    then=Value(True),
                ),
                default=Value(False),
            )
        )
    )
    counted = nodes.filter(unchanged=True)
    if skip_hosts:
        counted = counted.exclude(hostname__in=list(skip_hosts))
    return inputs.NodeCandidates(
        [
            NodeGpus(hostname, gpu_count, reporting)
            for hostname, gpu_count, reporting in nodes.filter(unchanged=False).values_list(
                "hostname", "gpu_count", "reporting"
            )
        ],
        counted.count(),
    )


def run(ctx: Context) -> list[Finding]:
    """The events since the previous run, the remap failures, and which GPUs each node
    still reports, judged. A GPU no event names, with no remap failure, whose exporter can
    report what the check needs and whose stored result is the pass "nothing new" would
    pass again unchanged: it is counted, not loaded (docs/checks.md, Candidates)."""
    since = inputs.previous_run_start(ctx.cluster, ctx.kind, ctx.now)
    fresh_after = ctx.now - dt.timedelta(seconds=ctx.limits.heartbeat_s)
    events = gpu_events(ctx.cluster, since)
    picked = inputs.gpus_candidates(
        ctx.cluster,
        ctx.kind,
        ("row_remap_failure",),
        passing=(Q(v_row_remap_failure__isnull=True) | Q(v_row_remap_failure=0))
        & ~Q(source__in=blinding_sources()),
        message=NOTHING_NEW,
        named={e.target for e in events},
        skip_hosts=ctx.in_maintenance,
    )
    nodes = node_gpus_candidates(ctx.cluster, fresh_after, ctx.in_maintenance)
    ctx.unchanged += picked.unchanged + nodes.unchanged
    return gpu_errors(
        events,
        picked.gpus,
        limits=ctx.limits,
        nodes=nodes.nodes,
        missing_runs=ctx.streaks("missing_runs"),
    )


SPEC = CheckSpec(
    kind=KIND,
    limits=GpuErrorsLimits,
    label=LABEL,
    order=50,
    target=GPU,
    categories=(Category.GPU_HBM, Category.GPU, Category.GPU_SYSTEM_PROCESSOR),
    run=run,
    needs=(
        Needed("ECC", ("ecc_dbe_total",), KIND, _("GPU errors"), OFF_BY_DEFAULT),
        Needed("NVLink CRC", ("nvlink_crc_errors",), KIND, _("GPU errors"), OFF_BY_DEFAULT),
        Needed(_("PCIe replay"), ("pcie_replay_total",), KIND, _("GPU errors"), NOT_IN_FILE),
        Needed(_("Row remap"), ("row_remap_failure",), KIND, _("GPU errors"), NOT_IN_FILE),
    ),
    pulls=frozenset({"xid", *COUNTERS, "row_remap_failure", "row_remap_pending"}),
    # The Moore Threads driver's fault lines, as the node agent's kernel-log follower sends
    # them: no catalogue of them is published, so each warns as unknown (docs/xid.md).
    node_events={MTHREADS_DRIVER: _("Moore Threads driver fault")},
)
