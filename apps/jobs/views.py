"""Job pages: the jobs list and a job's page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from apps.accounts.permissions import role_required
from apps.common.listing import list_page
from apps.fleet.models import Cluster
from apps.jobs.choices import JobStatus
from apps.jobs.filters import JobFilter
from apps.jobs.models import Job
from apps.jobs.selectors import job_list

SORTS = {
    "started": "started_at",
    "-started": "-started_at",
    "gpus": "gpu_count",
    "-gpus": "-gpu_count",
    "name": "name",
    "-name": "-name",
    "status": "status",
    "-status": "-status",
    "progress": "last_metric_at",
    "-progress": "-last_metric_at",
}


@role_required()
def job_list_page(request: HttpRequest) -> HttpResponse:
    """All jobs, filterable by cluster/status/name, sortable, paginated."""
    listing = list_page(
        request,
        JobFilter(request.GET, queryset=job_list()),
        sorts=SORTS,
        default_sort="-started",
        tiebreak="-id",
    )
    return render(
        request,
        "jobs/job_list.html",
        {
            **listing,
            "statuses": list(JobStatus),
            "selected_statuses": request.GET.getlist("status"),
            "clusters": Cluster.objects.values_list("name", flat=True),
            "now": timezone.now(),
        },
    )


@role_required()
def job_detail_page(request: HttpRequest, pk: int) -> HttpResponse:
    """A job: facts, progress chart (MFU, throughput, loss), checkpoints, nodes."""
    job = get_object_or_404(Job.objects.select_related("cluster"), pk=pk)
    factor = job.mfu_factor()
    return render(
        request,
        "jobs/job_detail.html",
        {
            "job": job,
            "mfu_now": job.last_tokens_per_s * factor if factor and job.last_tokens_per_s else None,
            "checkpoints": list(job.checkpoints.order_by("-saved_at")[:20]),
            "checkpoint_count": job.checkpoints.count(),
            "nodes": list(job.nodes.order_by("hostname").values_list("hostname", "state")),
            "now": timezone.now(),
        },
    )
