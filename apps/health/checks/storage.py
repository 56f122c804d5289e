"""`storage`: the cluster's required mounts on every node (docs/checks.md, `storage`).

Reads each in-service node's filesystem readings (`HostReading` of kind `filesystem`, one
per mount point) in one query and judges the cluster's `required_mounts` on each node that
reports filesystems. A node that never reported one is not judged; a cluster with no
required mounts, or none of whose nodes reported a filesystem, shows the check as "Not
monitored" on its Health page — never a pass.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from apps.common.words import Words
from apps.fleet.models import Cluster
from apps.health import inputs
from apps.health.checks.base import CheckSpec, Context
from apps.health.detectors.findings import Finding
from apps.health.detectors.storage import KIND, MOUNT, Mount, NodeFilesystems, storage
from apps.health.thresholds import Shared, threshold
from apps.incidents.choices import Category
from apps.telemetry.host_series import pull_name
from apps.telemetry.models import HostReading

FILESYSTEM = "filesystem"  # the host reading's kind (apps/telemetry/host_kinds.py)
NO_MOUNTS = _("no required mounts")
NOT_REPORTED = _("no node of this cluster has reported its filesystems")


@dataclass(frozen=True)
class StorageLimits(Shared):
    """The storage check's thresholds (docs/checks.md, Thresholds), besides those every
    check shares."""

    storage_min_free_pct: float = threshold(
        5.0, _("Required mount: free space under"), "%", check=KIND, lo=0, hi=100
    )


def filesystems(cluster: Cluster) -> list[NodeFilesystems]:
    """Each in-service node's filesystem readings, by mount point (one query)."""
    rows = HostReading.objects.filter(
        node__cluster=cluster,
        node__state__in=inputs.IN_SERVICE,
        kind=FILESYSTEM,
        ts__isnull=False,
    ).values_list("node__hostname", "subject", "ts", "values")
    mounts: dict[str, dict[str, Mount]] = defaultdict(dict)
    for host, subject, ts, values in rows:
        if ts is not None:  # (ts__isnull=False: for the type checker)
            mounts[host][subject] = Mount(ts, values if isinstance(values, dict) else {})
    return [
        NodeFilesystems(host, max(m.ts for m in points.values()), points)
        for host, points in sorted(mounts.items())
    ]


def run(ctx: Context) -> list[Finding]:
    """The cluster's required mounts on each node that reports filesystems; nothing to
    judge without required mounts."""
    required = list(ctx.cluster.required_mounts or [])
    if not required:
        return []
    return storage(filesystems(ctx.cluster), required=required, limits=ctx.limits)


def not_monitored(cluster: Cluster) -> Words | None:
    """Why the cluster's storage is not judged: it has no required mounts, or none of its
    nodes ever reported a filesystem (one query); None once one has."""
    if not cluster.required_mounts:
        return NO_MOUNTS
    reported = HostReading.objects.filter(node__cluster=cluster, kind=FILESYSTEM).exists()
    return None if reported else NOT_REPORTED


SPEC = CheckSpec(
    kind=KIND,
    limits=StorageLimits,
    label=_("Storage (required mounts)"),
    order=110,
    target=MOUNT,
    categories=(Category.STORAGE,),
    run=run,
    not_monitored=not_monitored,
    pulls=frozenset({pull_name(FILESYSTEM)}),
)
