"""One filterset per list, shared by the HTML page and the API (NetBox style)."""

from __future__ import annotations

import django_filters

from apps.common.filters import SortedFilterSet, SortFilter
from apps.fleet.choices import NodeState
from apps.fleet.models import Node


class NodeFilter(SortedFilterSet):
    """Filter nodes by cluster name, state, rack, or a hostname fragment; sort by host,
    rack, state, last seen or last state change."""

    cluster = django_filters.CharFilter(field_name="cluster__name")
    state = django_filters.MultipleChoiceFilter(choices=NodeState.choices)
    rack = django_filters.CharFilter()
    q = django_filters.CharFilter(field_name="hostname", lookup_expr="icontains", label="Host")
    sort = SortFilter(
        fields=(
            ("hostname", "hostname"),
            ("rack", "rack"),
            ("state", "state"),
            ("last_seen_at", "last_seen"),
            ("state_changed_at", "changed"),
        ),
        default="hostname",
        tiebreak="hostname",
    )

    class Meta:
        model = Node
        fields = ["cluster", "state", "rack", "q", "sort"]
