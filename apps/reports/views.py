"""Pages and chart data of the reports app: the overview, figures, the colour stylesheet."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.cache import cache_control

from apps.accounts.permissions import role_required
from apps.fleet.choices import NodeState
from apps.fleet.models import Cluster, Node
from apps.incidents.choices import IncidentStatus, Severity
from apps.jobs.choices import JobStatus
from apps.jobs.models import Job
from apps.reports.charts import job_progress_figure, node_telemetry_figure
from apps.reports.selectors import overview


def _pick_cluster(request: HttpRequest) -> tuple[Cluster | None, list[str]]:
    names = list(Cluster.objects.values_list("name", flat=True))
    wanted = request.GET.get("cluster")
    if wanted:
        return get_object_or_404(Cluster, name=wanted), names
    return Cluster.objects.order_by("name").first(), names


@role_required()
def overview_page(request: HttpRequest) -> HttpResponse:
    """The cluster overview: KPIs, node grid, running jobs, latest incidents."""
    cluster, names = _pick_cluster(request)
    context = {"clusters": names, "cluster": cluster, "now": timezone.now()}
    if cluster is not None:
        context["o"] = overview(cluster=cluster, now=context["now"])
    template = (
        "reports/_overview_panels.html" if request.GET.get("panel") else "reports/overview.html"
    )
    return render(request, template, context)


@role_required()
def job_figure(request: HttpRequest, pk: int) -> JsonResponse:
    """The job page's progress chart as Plotly JSON (≤ 2,000 points per trace)."""
    job = get_object_or_404(Job.objects.select_related("cluster"), pk=pk)
    return JsonResponse(job_progress_figure(job=job))


@role_required()
def node_figure(request: HttpRequest, hostname: str) -> JsonResponse:
    """A node's telemetry rollups over the last 24 h as Plotly JSON."""
    node = get_object_or_404(Node, hostname=hostname)
    return JsonResponse(node_telemetry_figure(node=node))


@cache_control(max_age=3600)
def colours_css(request: HttpRequest) -> HttpResponse:
    """CSS classes for every state's colour, generated from the choices that define them."""
    lines = []
    for prefix, choices in (
        ("state", NodeState),
        ("job", JobStatus),
        ("sev", Severity),
        ("inc", IncidentStatus),
    ):
        for value, colour in choices.colour_map().items():
            lines.append(f".{prefix}-{value}{{--c:{colour}}}")
    return HttpResponse("\n".join(lines) + "\n", content_type="text/css")
