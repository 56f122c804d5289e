"""Pages and chart data of the reports app: the overview, figures, the colour stylesheet."""

from __future__ import annotations

import datetime as dt

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from apps.accounts.permissions import role_required
from apps.fleet.models import Cluster
from apps.reports.reliability_charts import pareto_figure, reliability_trend_figure
from apps.reports.selectors import (
    category_costs,
    lemon_nodes,
    overview,
    reliability_report,
    targets_for,
    weekly_reliability,
)
from apps.reports.weekly import week_so_far


def pick_cluster(request: HttpRequest) -> tuple[Cluster | None, list[str]]:
    """`?cluster=NAME` (404 if unknown), else the first cluster by name; and every name."""
    names = list(Cluster.objects.values_list("name", flat=True))
    wanted = request.GET.get("cluster")
    if wanted:
        return get_object_or_404(Cluster, name=wanted), names
    return Cluster.objects.order_by("name").first(), names


@role_required()
def overview_page(request: HttpRequest) -> HttpResponse:
    """The cluster overview: KPIs, node grid, running jobs, latest incidents."""
    cluster, names = pick_cluster(request)
    context = {"clusters": names, "cluster": cluster, "now": timezone.now()}
    if cluster is not None:
        context["o"] = overview(cluster=cluster, now=context["now"])
        context["week"] = week_so_far(cluster=cluster, now=context["now"])
        context["targets"] = targets_for(cluster=cluster)
    template = (
        "reports/_overview_panels.html" if request.GET.get("panel") else "reports/overview.html"
    )
    return render(request, template, context)


@role_required()
def reliability_page(request: HttpRequest) -> HttpResponse:
    """MTBF at every level, MTTR/MTTD/MTTL, trends by week, causes (Pareto), lemon nodes."""
    cluster, names = pick_cluster(request)
    now = timezone.now()
    try:
        days = min(max(int(request.GET.get("days", 30)), 1), 365)
    except ValueError:
        days = 30
    context: dict[str, object] = {"clusters": names, "cluster": cluster, "now": now, "days": days}
    if cluster is not None:
        start = now - dt.timedelta(days=days)
        weeks = weekly_reliability(cluster=cluster, weeks=8, now=now)
        causes = category_costs(cluster=cluster, start=start, end=now, now=now)
        targets = targets_for(cluster=cluster)
        context.update(
            r=reliability_report(cluster=cluster, start=start, end=now, now=now, job_nodes=128),
            targets=targets,
            trend=reliability_trend_figure(weeks, targets.mtbf_hours),
            pareto=pareto_figure(causes),
            lemons=lemon_nodes(cluster=cluster, start=start, end=now, now=now),
        )
    return render(request, "reports/reliability.html", context)
