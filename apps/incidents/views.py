"""Incident pages: the list (filter, sort by cost) and an incident's page."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from apps.accounts.permissions import role_required
from apps.fleet.models import Cluster
from apps.incidents.choices import Category, IncidentStatus, Severity
from apps.incidents.filters import IncidentFilter
from apps.incidents.models import Incident, Postmortem
from apps.incidents.selectors import incident_list, time_marks

SORTS = {
    "-cost": "-lost_gpu_hours",
    "cost": "lost_gpu_hours",
    "-detected": "-detected_at",
    "detected": "detected_at",
    "severity": "severity",
    "-severity": "-severity",
}


@role_required()
def incident_list_page(request: HttpRequest) -> HttpResponse:
    """Incidents filterable by status, category, severity, node, job, time; sortable by cost."""
    filterset = IncidentFilter(request.GET, queryset=incident_list())
    sort = request.GET.get("sort", "-detected")
    qs = filterset.qs.order_by(SORTS.get(sort, "-detected_at"), "-id")
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    sort_query = query.copy()
    sort_query.pop("sort", None)
    return render(
        request,
        "incidents/incident_list.html",
        {
            "filter": filterset,
            "page": page,
            "query": query.urlencode(),
            "sort_query": sort_query.urlencode(),
            "sort": sort,
            "now": timezone.now(),
            "statuses": list(IncidentStatus),
            "severities": list(Severity),
            "categories": Category.choices,
            "clusters": Cluster.objects.values_list("name", flat=True),
            "selected": {k: request.GET.getlist(k) for k in ("status", "severity", "category")},
        },
    )


@role_required()
def incident_detail_page(request: HttpRequest, pk: int) -> HttpResponse:
    """An incident: its times on a bar, cost, nodes, job, timeline, postmortem."""
    incident = get_object_or_404(Incident.objects.select_related("cluster", "job"), pk=pk)
    postmortem = (
        Postmortem.objects.filter(incident=incident).select_related("author", "reviewer").first()
    )
    return render(
        request,
        "incidents/incident_detail.html",
        {
            "incident": incident,
            "marks": time_marks(incident),
            "now": timezone.now(),
            "nodes": list(incident.nodes.order_by("hostname").values_list("hostname", "state")),
            "timeline": list(incident.timeline.all()),
            "postmortem": postmortem,
            "actions": list(postmortem.action_items.select_related("owner")) if postmortem else [],
        },
    )
