"""The trends page and the small JSON endpoints behind its charts (`/charts/reports/…`,
the weekly page polls one of them too): each over `?cluster=&days=`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from apps.accounts.permissions import role_required
from apps.fleet.models import Cluster
from apps.reports.params import int_param, pick_cluster
from apps.reports.selectors import targets_for
from apps.reports.trends import availability_by_time, checkpoint_report, mfu_by_hour
from apps.reports.weekly import effective_by_week
from apps.reports.weekly_charts import (
    availability_figure,
    availability_heatmap_figure,
    checkpoint_cost_figure,
    effective_by_week_figure,
    mfu_figure,
)

Figure = dict[str, Any]
Build = Callable[[Cluster, dt.datetime, dt.datetime, dt.datetime], Figure]


@role_required()
def trends_page(request: HttpRequest) -> HttpResponse:
    """Charts an operator keeps open; each polls its own small JSON endpoint."""
    cluster, names = pick_cluster(request)
    context: dict[str, Any] = {
        "clusters": names,
        "cluster": cluster,
        "days": int_param(request, "days", 30, 1, 90),
    }
    if cluster is not None:
        context["advice"] = checkpoint_report(cluster=cluster, now=timezone.now())
        context["targets"] = targets_for(cluster=cluster)
    return render(request, "reports/trends.html", context)


def _chart(build: Build) -> Callable[[HttpRequest], HttpResponse]:
    """A chart endpoint over `?cluster=&days=` (default 30, at most 90)."""

    @role_required()
    def view(request: HttpRequest) -> JsonResponse:
        cluster, _ = pick_cluster(request)
        if cluster is None:
            raise Http404("no cluster")
        now = timezone.now()
        days = int_param(request, "days", 30, 1, 90)
        return JsonResponse(build(cluster, now - dt.timedelta(days=days), now, now))

    view.__doc__ = build.__doc__
    return view


def _mfu(cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime) -> Figure:
    """Cluster and per-job MFU per hour."""
    target = targets_for(cluster=cluster).mean_mfu
    return mfu_figure(mfu_by_hour(cluster=cluster, start=start, end=end), target)


def _availability(
    cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime
) -> Figure:
    """GPU availability per hour."""
    series = availability_by_time(cluster=cluster, start=start, end=end, now=now)
    return availability_figure(series, targets_for(cluster=cluster).availability)


def _heatmap(cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime) -> Figure:
    """Node × day availability of the nodes that lost most time."""
    series = availability_by_time(cluster=cluster, start=start, end=end, now=now)
    return availability_heatmap_figure(series)


def _effective(cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime) -> Figure:
    """Effective rate and lost GPU-hours per ISO week."""
    weeks = max(1, min(12, (end - start).days // 7 + 1))
    return effective_by_week_figure(
        effective_by_week(cluster=cluster, weeks=weeks, now=now),
        targets_for(cluster=cluster).effective_rate,
    )


def _checkpoints(
    cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime
) -> Figure:
    """Checkpoint cost per running job and what the advised interval would save."""
    return checkpoint_cost_figure(checkpoint_report(cluster=cluster, now=now))


mfu_chart = _chart(_mfu)
availability_chart = _chart(_availability)
availability_heatmap_chart = _chart(_heatmap)
effective_chart = _chart(_effective)
checkpoint_chart = _chart(_checkpoints)
