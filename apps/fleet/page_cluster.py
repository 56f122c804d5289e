"""Which cluster a per-cluster page shows (docs/pages.md, The cluster a page shows): the one
its address names (`?cluster=`, kept in the session as the person's last choice), else the
last one chosen, else the largest cluster — the one with the most GPUs."""

from __future__ import annotations

from django.db.models import Count, F
from django.http import Http404, HttpRequest

from apps.fleet.models import Cluster
from apps.fleet.selectors import cluster_get

SESSION_KEY = "cluster"  # the last cluster chosen, by name


def clusters_by_size() -> list[tuple[str, int]]:
    """Every cluster's (name, GPUs) — its nodes × GPUs per node — in name order; one query."""
    rows = Cluster.objects.annotate(gpus=Count("nodes") * F("gpus_per_node")).order_by("name")
    return list(rows.values_list("name", "gpus"))


def largest(sizes: list[tuple[str, int]]) -> str | None:
    """The name of the cluster with the most GPUs, the first by name on a tie."""
    return min(sizes, key=lambda row: (-row[1], row[0]))[0] if sizes else None


def cluster_remember(request: HttpRequest, name: str) -> None:
    """Keep `name` as the person's last choice (written only when it changes). A page's own
    script fetching a part of it (`Sec-Fetch-Dest: empty`: the overview's health line, which
    names its cluster) never does: a refresh sent by the page a person just left, answered
    after they chose another cluster, would otherwise take their choice back."""
    if request.headers.get("Sec-Fetch-Dest") == "empty":
        return
    session = getattr(request, "session", None)
    if session is not None and name and session.get(SESSION_KEY) != name:
        session[SESSION_KEY] = name


def page_cluster(request: HttpRequest) -> tuple[Cluster | None, list[str]]:
    """The cluster the page shows, and every cluster's name (name order).

    `?cluster=NAME` wins (404 if there is no such cluster) and is remembered; without it the
    remembered choice, if that cluster still exists; otherwise the largest cluster. Two
    queries."""
    sizes = clusters_by_size()
    names = [name for name, _ in sizes]
    wanted = request.GET.get("cluster")
    if wanted:
        if wanted not in names:
            raise Http404(f"no cluster {wanted}")
        cluster_remember(request, wanted)
    else:
        session = getattr(request, "session", None)
        kept = session.get(SESSION_KEY) if session is not None else None
        wanted = kept if kept in names else largest(sizes)
    if not wanted:
        return None, names
    return cluster_get(name=wanted), names
