"""Actuation list filters (docs/slurm.md, Actuation: `GET actuations/?cluster=&node=`)."""

from __future__ import annotations

import django_filters

from apps.scheduler.choices import ActuationAction, ActuationResult
from apps.scheduler.models import Actuation


class ActuationFilter(django_filters.FilterSet):
    """Filter actuations by cluster name, node hostname, action or result; newest first."""

    cluster = django_filters.CharFilter(field_name="node__cluster__name")
    node = django_filters.CharFilter(field_name="node__hostname")
    action = django_filters.ChoiceFilter(choices=ActuationAction.choices)
    result = django_filters.MultipleChoiceFilter(choices=ActuationResult.choices)

    class Meta:
        model = Actuation
        fields = ["cluster", "node", "action", "result"]
