"""Job list filters, shared by the HTML page and the API."""

from __future__ import annotations

import django_filters

from apps.common.filters import SortedFilterSet, SortFilter
from apps.jobs.choices import JobStatus
from apps.jobs.models import Job


class JobFilter(SortedFilterSet):
    """Filter jobs by cluster name, status, scheduler id (`external_id`, e.g. Slurm's job
    id) or a name fragment; sort by start, GPUs, name, status or last progress (newest first
    by default)."""

    cluster = django_filters.CharFilter(field_name="cluster__name")
    external_id = django_filters.CharFilter(field_name="external_id", max_length=64)
    status = django_filters.MultipleChoiceFilter(choices=JobStatus.choices)
    q = django_filters.CharFilter(field_name="name", lookup_expr="icontains", label="Name")
    sort = SortFilter(
        fields=(
            ("started_at", "started"),
            ("gpu_count", "gpus"),
            ("name", "name"),
            ("status", "status"),
            ("progress_at", "progress"),
        ),
        default="-started",
        tiebreak="-id",
    )

    class Meta:
        model = Job
        fields = ["cluster", "status", "external_id", "q", "sort"]
