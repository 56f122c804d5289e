"""The reliability page: MTBF at every level, MTTR/MTTD/MTTL, trends by week, recovery time
per week and its parts, causes (Pareto), lemon nodes."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from apps.accounts.permissions import role_required
from apps.common import panels
from apps.reports.params import int_param, pick_cluster
from apps.reports.reliability_charts import (
    pareto_figure,
    recovery_parts_figure,
    reliability_trend_figure,
)
from apps.reports.selectors import (
    LEMON_FAILURES,
    category_costs,
    lemon_nodes,
    recovery_by_week,
    reliability_report,
    targets_for,
    weekly_reliability,
)
from apps.reports.targets import RECOVERY_REFERENCE_MINUTES


@role_required()
def reliability_page(request: HttpRequest) -> HttpResponse:
    """MTBF at every level, MTTR/MTTD/MTTL, trends by week, recovery time per week and its
    parts (the weeks of the window), causes (Pareto), lemon nodes, over the last `?days=` (30
    by default, at most 365)."""
    cluster, names = pick_cluster(request)
    now = timezone.now()
    days = int_param(request, "days", 30, 1, 365)
    context: dict[str, Any] = {"clusters": names, "cluster": cluster, "now": now, "days": days}
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
            recovery_reference=RECOVERY_REFERENCE_MINUTES,
            recovery=recovery_parts_figure(recovery_by_week(cluster=cluster, start=start, now=now)),
            lemons=lemon_nodes(cluster=cluster, start=start, end=now, now=now),
            lemon_failures=LEMON_FAILURES,
            # the repeat offenders (the repairs app lends them)
            panels=panels.render(slot=panels.RELIABILITY, request=request, cluster=cluster),
        )
    return render(request, "reports/reliability.html", context)
