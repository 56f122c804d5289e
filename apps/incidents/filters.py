"""Incident list filters, shared by the API and (later) the incidents page."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet

from apps.common.filters import IdFilter
from apps.incidents.choices import Category, IncidentStatus, Severity
from apps.incidents.models import Incident, UnroutedAlert


class IncidentFilter(django_filters.FilterSet):
    """By cluster, status, category, severity, node, job, and failure time (start/end)."""

    cluster = django_filters.CharFilter(field_name="cluster__name")
    status = django_filters.MultipleChoiceFilter(choices=IncidentStatus.choices)
    category = django_filters.MultipleChoiceFilter(choices=Category.choices)
    severity = django_filters.MultipleChoiceFilter(choices=Severity.choices)
    node = django_filters.CharFilter(field_name="nodes__hostname", distinct=True)
    job = IdFilter(field_name="job_id")
    start = django_filters.IsoDateTimeFilter(method="filter_start")
    end = django_filters.IsoDateTimeFilter(method="filter_end")

    order = django_filters.OrderingFilter(
        # `cost_now`: lost GPU-hours at this instant, annotated by `costs.with_cost_order`.
        fields=(("cost_now", "cost"), ("detected_at", "detected"), ("severity", "severity"))
    )

    class Meta:
        model = Incident
        fields = [
            "cluster",
            "status",
            "category",
            "severity",
            "node",
            "job",
            "start",
            "end",
            "order",
        ]

    def filter_start(self, queryset: QuerySet, name: str, value: object) -> QuerySet:
        """f(i) ≥ start."""
        return queryset.filter(
            Q(occurred_at__gte=value) | Q(occurred_at__isnull=True, detected_at__gte=value)
        )

    def filter_end(self, queryset: QuerySet, name: str, value: object) -> QuerySet:
        """f(i) < end."""
        return queryset.filter(
            Q(occurred_at__lt=value) | Q(occurred_at__isnull=True, detected_at__lt=value)
        )


class UnroutedAlertFilter(django_filters.FilterSet):
    """`since`: alerts delivered at or after it; `status`: firing or resolved."""

    since = django_filters.IsoDateTimeFilter(field_name="received_at", lookup_expr="gte")
    status = django_filters.ChoiceFilter(choices=UnroutedAlert.Status.choices)

    class Meta:
        model = UnroutedAlert
        fields = ["since", "status"]
