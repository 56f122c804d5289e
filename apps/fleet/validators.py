"""Rules about the fleet that the apps above it check before they write (docs/api.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.core.exceptions import ValidationError

from apps.fleet.models import Cluster, Node

# How many unknown hostnames an error names: enough to see the pattern, not a page of them.
SHOWN_UNKNOWN = 20


@dataclass(frozen=True)
class NodesNamed:
    """What a list of hostnames names in one cluster: hostname → node for those that are
    its nodes (in the order first named), and the names that are not — unknown, or another
    cluster's — in the order first named, each once."""

    nodes: dict[str, Node]
    unknown: list[str]


def nodes_named(*, cluster_id: int, hostnames: Iterable[str]) -> NodesNamed:
    """The one rule that nodes named in a write belong to its cluster, read in one query.
    Each caller words its refusal as its endpoint documents it (`nodes_of_cluster` for
    the API's `nodes` field; the incident form, maintenance windows, job metrics and rank
    reports theirs)."""
    wanted = list(dict.fromkeys(hostnames))
    if not wanted:
        return NodesNamed({}, [])
    found = {n.hostname: n for n in Node.objects.filter(cluster_id=cluster_id, hostname__in=wanted)}
    return NodesNamed(
        {h: found[h] for h in wanted if h in found}, [h for h in wanted if h not in found]
    )


def nodes_of_cluster(*, cluster: Cluster, hostnames: Iterable[str]) -> list[Node]:
    """The cluster's nodes named by `hostnames`, in the order first named (a repeat counts
    once), read in one query. A name that is not a node of this cluster — unknown, or
    another cluster's — is a ValidationError on `nodes` that names the first 20 of them;
    a serializer's `validate` passes it on as the same 400."""
    named = nodes_named(cluster_id=cluster.pk, hostnames=hostnames)
    if named.unknown:
        shown = ", ".join(named.unknown[:SHOWN_UNKNOWN])
        raise ValidationError({"nodes": [f"unknown in cluster {cluster.name}: {shown}"]})
    return list(named.nodes.values())
