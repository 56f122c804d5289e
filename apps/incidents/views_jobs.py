"""The incidents panel of a job's page: its incidents and what each cost at this instant."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from apps.accounts.permissions import role_required
from apps.incidents.costs import costs_at
from apps.incidents.models import Incident
from apps.jobs.models import Job

LIMIT = 50


@role_required()
def job_incidents_fragment(request: HttpRequest, pk: int) -> HttpResponse:
    """The job's incidents, newest first, with downtime, rework and lost GPU-hours up to
    now for those not yet recovered (the figures of the incident list and page)."""
    job = get_object_or_404(Job, pk=pk)
    now = timezone.now()
    incidents = (
        Incident.objects.filter(job=job).select_related("job").order_by("-detected_at", "-id")
    )
    return render(
        request,
        "incidents/_job_incidents.html",
        {
            "incidents": costs_at(incidents[:LIMIT], now=now),
            "total": incidents.count(),
            "limit": LIMIT,
            "now": now,
        },
    )
