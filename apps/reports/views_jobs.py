"""The effective-rate panel of a job's page: the weekly rate for one job, so it is the reports app's
(as the incidents app serves that page's incidents panel); the URL sits beside the job's
chart, under /charts/jobs/."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from apps.accounts.permissions import role_required
from apps.jobs.selectors import job_detail
from apps.reports.selectors import targets_for
from apps.reports.trends import job_effective


@role_required()
def job_effective_fragment(request: HttpRequest, pk: int) -> HttpResponse:
    """The job page's effective-rate panel: whole run, this week, checkpoint advice."""
    job = job_detail(pk=pk)
    if job is None:
        raise Http404(f"no job {pk}")
    return render(
        request,
        "reports/_job_effective.html",
        {
            "job": job,
            "e": job_effective(job=job, now=timezone.now()),
            "targets": targets_for(cluster=job.cluster),
        },
    )
