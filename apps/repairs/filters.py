"""Repair list filters (docs/repairs.md: `GET repairs/?cluster=&status=`)."""

from __future__ import annotations

import django_filters

from apps.repairs.choices import RepairStatus
from apps.repairs.models import Repair


class RepairFilter(django_filters.FilterSet):
    """By cluster name, status (repeatable) and node hostname."""

    cluster = django_filters.CharFilter(field_name="node__cluster__name", help_text="cluster name")
    status = django_filters.MultipleChoiceFilter(choices=RepairStatus.choices)
    node = django_filters.CharFilter(field_name="node__hostname", help_text="hostname")

    class Meta:
        model = Repair
        fields = ["cluster", "status", "node"]
