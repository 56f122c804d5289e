"""The search page behind the header's search box."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from apps.accounts.permissions import role_required
from apps.fleet.models import Node
from apps.incidents.models import Incident
from apps.search.selectors import PER_KIND, search


@role_required()
def search_page(request: HttpRequest) -> HttpResponse:
    """`GET /search/?q=`: matches by kind (nodes, jobs, incidents; a switch name lists its
    nodes); straight to the node an exact hostname names, or to the object when exactly one
    matches."""
    results = search(request.GET.get("q", ""))
    one = results.only()
    if one is not None:
        if isinstance(one, Node):
            return redirect("node-detail", hostname=one.hostname)
        if isinstance(one, Incident):
            return redirect("incident-detail", pk=one.pk)
        return redirect("job-detail", pk=one.pk)
    return render(request, "search/search.html", {"r": results, "per_kind": PER_KIND})
