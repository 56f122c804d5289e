"""Rules about the fleet that the apps above it check before they write (docs/api.md)."""

from __future__ import annotations

from collections.abc import Iterable

from django.core.exceptions import ValidationError

from apps.fleet.models import Cluster, Node

# How many unknown hostnames an error names: enough to see the pattern, not a page of them.
SHOWN_UNKNOWN = 20


def nodes_of_cluster(*, cluster: Cluster, hostnames: Iterable[str]) -> list[Node]:
    """The cluster's nodes named by `hostnames`, in the order first named (a repeat counts
    once), read in one query. A name that is not a node of this cluster — unknown, or
    another cluster's — is a ValidationError on `nodes` that names the first 20 of them;
    a serializer's `validate` passes it on as the same 400."""
    wanted = list(dict.fromkeys(hostnames))
    found = {n.hostname: n for n in Node.objects.filter(cluster=cluster, hostname__in=wanted)}
    missing = [h for h in wanted if h not in found]
    if missing:
        shown = ", ".join(missing[:SHOWN_UNKNOWN])
        raise ValidationError({"nodes": [f"unknown in cluster {cluster.name}: {shown}"]})
    return [found[h] for h in wanted]
