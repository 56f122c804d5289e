"""What a search box query finds: nodes, jobs and incidents, each kind bounded."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q
from django.utils.translation import gettext as _

from apps.common.hostnames import HostlistError, Hostlists
from apps.fleet.models import Node
from apps.incidents.models import Incident
from apps.jobs.models import Job

PER_KIND = 25  # results shown per kind; more is "narrow the search"
HOSTLIST_NAMES = 4096  # names one hostlist query may expand to
MAX_QUERY = 200  # characters of a query looked at
_NUMBER = re.compile(r"#?(\d{1,18})")


@dataclass
class Found:
    """One kind's matches (at most PER_KIND) and whether there were more."""

    items: list[Any] = field(default_factory=list)
    more: bool = False


@dataclass
class Results:
    """Matches by kind for one query, and a note when part of it could not be read."""

    query: str
    nodes: Found = field(default_factory=Found)
    jobs: Found = field(default_factory=Found)
    incidents: Found = field(default_factory=Found)
    note: str = ""
    exact_node: Node | None = None  # the node whose hostname is the query: opened at once
    switches: list[tuple[str, str]] = field(default_factory=list)  # (cluster, switch) named

    @property
    def switch_nodes(self) -> bool:
        """Whether the nodes listed include those of a switch the query names."""
        return bool(self.switches)

    @property
    def total(self) -> int:
        return len(self.nodes.items) + len(self.jobs.items) + len(self.incidents.items)

    def only(self) -> Any | None:
        """The one object to go straight to: the node a hostname names exactly (as a job id
        opens its job), else the one object found, when exactly one was."""
        if self.exact_node is not None:
            return self.exact_node
        if self.total != 1 or self.nodes.more or self.jobs.more or self.incidents.more:
            return None
        return (self.nodes.items + self.jobs.items + self.incidents.items)[0]


def _bounded(queryset: Any, limit: int) -> Found:
    rows = list(queryset[: limit + 1])
    return Found(rows[:limit], len(rows) > limit)


def _is_hostlist(query: str) -> bool:
    return any(c in query for c in "[],") and " " not in query


def search(query: str, *, limit: int = PER_KIND) -> Results:
    """Nodes by hostname (exact, then containing the text), by a hostlist like
    `gpu[01-04]` or by the leaf switch they hang off (`leaf-010`: its nodes); jobs by name,
    id or Slurm job id; incidents by number (`#123` or `123`) or title. At most `limit` of
    each kind."""
    q = " ".join(query.split())[:MAX_QUERY]
    out = Results(query=q)
    if not q:
        return out
    number = _NUMBER.fullmatch(q)
    if _is_hostlist(q):
        try:
            names = Hostlists(HOSTLIST_NAMES).hostnames(q)
        except HostlistError as exc:
            out.note = _("Not a hostlist: %(error)s") % {"error": exc}
        else:
            nodes = Node.objects.filter(hostname__in=names).select_related("cluster")
            out.nodes = _bounded(nodes.order_by("hostname"), limit)
            return out
    if not q.startswith("#"):
        exact = list(Node.objects.filter(hostname__iexact=q).select_related("cluster")[:1])
        if exact:
            out.exact_node = exact[0]
            out.nodes = Found(exact)
            return out
        out.switches = sorted(
            set(Node.objects.filter(switch__iexact=q).values_list("cluster__name", "switch"))
        )
        nodes = Node.objects.filter(Q(hostname__icontains=q) | Q(switch__iexact=q))
        out.nodes = _bounded(nodes.select_related("cluster").order_by("hostname"), limit)
    jobs = Q(external_id=q) | Q(name__icontains=q)
    incidents = Q(title__icontains=q)
    if number:
        n = int(number.group(1))
        if q.startswith("#"):
            jobs, incidents = Q(pk__in=[]), Q(pk=n)
        else:
            jobs |= Q(pk=n) | Q(external_id=number.group(1))
            incidents = Q(pk=n)
    out.jobs = _bounded(
        Job.objects.filter(jobs).select_related("cluster").order_by("-created_at", "-pk"), limit
    )
    out.incidents = _bounded(
        Incident.objects.filter(incidents).select_related("cluster").order_by("-detected_at"),
        limit,
    )
    return out
