"""One filterset per list, shared by the HTML page and the API (NetBox style)."""

from __future__ import annotations

import django_filters

from apps.fleet.choices import NodeState
from apps.fleet.models import Node


class NodeFilter(django_filters.FilterSet):
    """Filter nodes by cluster name, state, rack, or a hostname fragment."""

    cluster = django_filters.CharFilter(field_name="cluster__name")
    state = django_filters.MultipleChoiceFilter(choices=NodeState.choices)
    rack = django_filters.CharFilter()
    q = django_filters.CharFilter(field_name="hostname", lookup_expr="icontains", label="Host")

    class Meta:
        model = Node
        fields = ["cluster", "state", "rack", "q"]
