"""Window list filters (docs/maintenance.md: `GET maintenance/?cluster=&active=true`)."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet
from django.utils import timezone

from apps.maintenance.choices import WindowStatus
from apps.maintenance.models import MaintenanceWindow
from apps.maintenance.selectors import in_progress


class WindowFilter(django_filters.FilterSet):
    """By cluster name, by whether a window is in progress now, by status, by node."""

    cluster = django_filters.CharFilter(field_name="cluster__name", help_text="cluster name")
    active = django_filters.BooleanFilter(
        method="filter_active", help_text="true: in progress now; false: not"
    )
    status = django_filters.MultipleChoiceFilter(choices=WindowStatus.choices)
    node = django_filters.CharFilter(
        field_name="nodes__hostname", distinct=True, help_text="windows covering this hostname"
    )

    class Meta:
        model = MaintenanceWindow
        fields = ["cluster", "active", "status", "node"]

    def filter_active(
        self, queryset: QuerySet[MaintenanceWindow], name: str, value: bool | None
    ) -> QuerySet[MaintenanceWindow]:
        """In progress now (`true`) or not (`false`)."""
        if value is None:
            return queryset
        now = timezone.now()
        return queryset.filter(in_progress(now)) if value else queryset.exclude(in_progress(now))
