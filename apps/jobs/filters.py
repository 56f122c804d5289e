"""Job list filters, shared by the HTML page and the API."""

from __future__ import annotations

import django_filters

from apps.jobs.choices import JobStatus
from apps.jobs.models import Job


class JobFilter(django_filters.FilterSet):
    """Filter jobs by cluster name, status, or a name fragment."""

    cluster = django_filters.CharFilter(field_name="cluster__name")
    status = django_filters.MultipleChoiceFilter(choices=JobStatus.choices)
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains", label="Name")

    class Meta:
        model = Job
        fields = ["cluster", "status", "q"]
