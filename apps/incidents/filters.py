"""Incident and unrouted-alert list filters and sorting, shared by the pages and the API."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet

from apps.common.filters import IdFilter, SortedFilterSet, SortFilter
from apps.incidents.choices import Category, IncidentStatus, PostmortemStatus, Severity
from apps.incidents.models import Incident, UnroutedAlert


class IncidentFilter(SortedFilterSet):
    """By cluster, status, category, severity, node, job, and failure time (start/end);
    sorted by cost, detection time or severity (newest first by default)."""

    cluster = django_filters.CharFilter(field_name="cluster__name")
    status = django_filters.MultipleChoiceFilter(choices=IncidentStatus.choices)
    category = django_filters.MultipleChoiceFilter(choices=Category.choices)
    severity = django_filters.MultipleChoiceFilter(choices=Severity.choices)
    node = django_filters.CharFilter(field_name="nodes__hostname", distinct=True)
    job = IdFilter(field_name="job_id")
    assignee = django_filters.CharFilter(method="filter_assignee", label="Assignee")
    postmortem = django_filters.ChoiceFilter(
        field_name="postmortem__status",
        choices=PostmortemStatus.choices,
        label="Postmortem",
    )
    start = django_filters.IsoDateTimeFilter(method="filter_start")
    end = django_filters.IsoDateTimeFilter(method="filter_end")

    sort = SortFilter(
        # `cost_now`: lost GPU-hours at this instant, annotated by `costs.with_cost_order`.
        fields=(("cost_now", "cost"), ("detected_at", "detected"), ("severity", "severity")),
        default="-detected",
        tiebreak="-id",
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
            "assignee",
            "postmortem",
            "start",
            "end",
            "sort",
        ]

    def filter_assignee(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        """A username; `me` is whoever asks ("my incidents")."""
        user = getattr(self.request, "user", None)
        if value == "me" and user is not None and user.is_authenticated:
            value = user.get_username()
        return queryset.filter(assignee=value)

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


class UnroutedAlertFilter(SortedFilterSet):
    """`since`: alerts delivered at or after it; `status`: firing or resolved; sorted by
    last delivery (newest first by default), start, or number of deliveries."""

    since = django_filters.IsoDateTimeFilter(field_name="received_at", lookup_expr="gte")
    status = django_filters.ChoiceFilter(choices=UnroutedAlert.Status.choices)
    sort = SortFilter(
        fields=(
            ("received_at", "received"),
            ("starts_at", "started"),
            ("deliveries", "deliveries"),
        ),
        default="-received",
        tiebreak="-id",
    )

    class Meta:
        model = UnroutedAlert
        fields = ["since", "status", "sort"]
