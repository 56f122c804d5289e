"""Filters for runs and results, shared by the health page and the API."""

from __future__ import annotations

import django_filters

from apps.health.checks import KIND_CHOICES
from apps.health.choices import ResultStatus
from apps.health.models import CheckResult, CheckRun


class ResultFilter(django_filters.FilterSet):
    """Results by cluster, kind, status, node."""

    cluster = django_filters.CharFilter(field_name="cluster__name")
    kind = django_filters.MultipleChoiceFilter(choices=KIND_CHOICES)
    status = django_filters.MultipleChoiceFilter(choices=ResultStatus.choices)
    node = django_filters.CharFilter(field_name="node__hostname")

    class Meta:
        model = CheckResult
        fields = ["cluster", "kind", "status", "node"]


class RunFilter(django_filters.FilterSet):
    """Runs by cluster and kind."""

    cluster = django_filters.CharFilter(field_name="cluster__name")
    kind = django_filters.ChoiceFilter(choices=KIND_CHOICES)

    class Meta:
        model = CheckRun
        fields = ["cluster", "kind"]
