"""The weekly report (page, CSV, PDF), the trends page and the small JSON endpoints behind
its charts."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from django.db.models import Avg
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from apps.accounts.permissions import role_required
from apps.common.weeks import WEEK, last_complete_week, parse_week, week_label
from apps.fleet.models import Cluster
from apps.jobs.models import Checkpoint, Job
from apps.reports.choices import LOSS_CAUSES
from apps.reports.export import headline, weekly_csv, weekly_pdf
from apps.reports.planning import what_if
from apps.reports.selectors import reliability_report, targets_for
from apps.reports.trends import (
    availability_by_time,
    checkpoint_report,
    job_effective,
    mfu_by_hour,
)
from apps.reports.views import pick_cluster
from apps.reports.weekly import effective_by_week, weekly_report
from apps.reports.weekly_charts import (
    availability_figure,
    availability_heatmap_figure,
    checkpoint_cost_figure,
    effective_by_week_figure,
    lost_by_category_figure,
    mfu_figure,
    waterfall_figure,
)

DEFAULT_CHECKPOINT_COST_S = 60.0


def _week(request: HttpRequest, now: dt.datetime) -> dt.datetime:
    """`?week=2026-W47` (404 for a malformed or future week), else the last complete week
    (CONTRACT §6: the report opens on a finished week, not on one still in progress)."""
    text = request.GET.get("week")
    if not text:
        return last_complete_week(now)
    try:
        start = parse_week(text)
    except ValueError as exc:
        raise Http404(str(exc)) from exc
    if start > now:
        raise Http404("that week has not started")
    return start


def _int(request: HttpRequest, key: str, default: int, lo: int, hi: int) -> int:
    try:
        return min(max(int(request.GET.get(key, default)), lo), hi)
    except ValueError:
        return default


def _projection(cluster: Cluster, now: dt.datetime, gpus: int) -> dict[str, Any]:
    """What-if for a job of `gpus` GPUs from the last 30 days' node MTBF and MTTR."""
    start = now - dt.timedelta(days=30)
    rel = reliability_report(cluster=cluster, start=start, end=now, now=now, job_nodes=1)
    cost = Checkpoint.objects.filter(
        job__cluster=cluster, saved_at__gte=start, blocking_s__gt=0
    ).aggregate(c=Avg("blocking_s"))["c"]
    out: dict[str, Any] = {"gpus": gpus, "rel": rel, "cost_s": cost or DEFAULT_CHECKPOINT_COST_S}
    if rel["node_mtbf_hours"]:
        out["p"] = what_if(
            gpus=gpus,
            gpus_per_node=cluster.gpus_per_node,
            node_mtbf_hours=rel["node_mtbf_hours"],
            mttr_minutes=rel["mttr_minutes"] or 0.0,
            checkpoint_cost_s=out["cost_s"],
        )
    return out


@role_required()
def weekly_page(request: HttpRequest) -> HttpResponse:
    """Headline figures against targets and last week, where the GPU-hours went, causes,
    jobs, the incidents behind the lost hours, and a what-if for a larger run."""
    cluster, names = pick_cluster(request)
    now = timezone.now()
    start = _week(request, now)
    context: dict[str, Any] = {"clusters": names, "cluster": cluster, "now": now}
    if cluster is not None:
        report = weekly_report(cluster=cluster, start=start, now=now)
        previous = weekly_report(cluster=cluster, start=start - WEEK, now=now)
        last = {k: v for k, v, _ in headline(previous)}
        context.update(
            r=report,
            prev=previous,
            rows=[(k, v, last.get(k, ""), t) for k, v, t in headline(report)],
            week=report["week"],
            prev_week=week_label(start - WEEK),
            next_week=week_label(start + WEEK) if start + WEEK <= now else None,
            targets=targets_for(cluster=cluster),
            causes=[
                (
                    c.value,
                    c.label,
                    report["lost_gpu_hours"][c],
                    report["lost_gpu_hours"][c] / report["scheduled_gpu_hours"]
                    if report["scheduled_gpu_hours"]
                    else None,
                )
                for c in LOSS_CAUSES
            ],
            lost_total=sum(report["lost_gpu_hours"].values()),
            prev_lost=sum(previous["lost_gpu_hours"].values()),
            waterfall=waterfall_figure(report),
            categories=lost_by_category_figure(report["lost_by_category"]),
            whatif=_projection(cluster, now, _int(request, "gpus", 16_384, 8, 1_000_000)),
        )
    return render(request, "reports/weekly.html", context)


@role_required()
def weekly_download(request: HttpRequest, fmt: str) -> HttpResponse:
    """The week's report as `csv` or `pdf` (every reader may export)."""
    cluster, _ = pick_cluster(request)
    if cluster is None:
        raise Http404("no cluster")
    now = timezone.now()
    start = _week(request, now)
    report = weekly_report(cluster=cluster, start=start, now=now)
    name = f"kuae-weekly-{cluster.name}-{report['week']}"
    if fmt == "csv":
        response = HttpResponse(weekly_csv(report), content_type="text/csv; charset=utf-8")
    else:
        previous = weekly_report(cluster=cluster, start=start - WEEK, now=now)
        response = HttpResponse(weekly_pdf(report, previous), content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


@role_required()
def trends_page(request: HttpRequest) -> HttpResponse:
    """Charts an operator keeps open; each polls its own small JSON endpoint."""
    cluster, names = pick_cluster(request)
    context: dict[str, Any] = {
        "clusters": names,
        "cluster": cluster,
        "days": _int(request, "days", 30, 1, 90),
    }
    if cluster is not None:
        context["advice"] = checkpoint_report(cluster=cluster, now=timezone.now())
    return render(request, "reports/trends.html", context)


def _chart(build: Callable[[Cluster, dt.datetime, dt.datetime, dt.datetime], dict]) -> Callable:
    """A chart endpoint over `?cluster=&days=` (default 30, at most 90)."""

    @role_required()
    def view(request: HttpRequest) -> JsonResponse:
        cluster, _ = pick_cluster(request)
        if cluster is None:
            raise Http404("no cluster")
        now = timezone.now()
        days = _int(request, "days", 30, 1, 90)
        return JsonResponse(build(cluster, now - dt.timedelta(days=days), now, now))

    view.__doc__ = build.__doc__
    return view


def _mfu(cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime) -> dict:
    """Cluster and per-job MFU per hour."""
    target = targets_for(cluster=cluster).mean_mfu
    return mfu_figure(mfu_by_hour(cluster=cluster, start=start, end=end), target)


def _availability(cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime) -> dict:
    """GPU availability per hour."""
    series = availability_by_time(cluster=cluster, start=start, end=end, now=now)
    return availability_figure(series, targets_for(cluster=cluster).availability)


def _heatmap(cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime) -> dict:
    """Node × day availability of the nodes that lost most time."""
    series = availability_by_time(cluster=cluster, start=start, end=end, now=now)
    return availability_heatmap_figure(series)


def _effective(cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime) -> dict:
    """Effective rate and lost GPU-hours per ISO week."""
    weeks = max(1, min(12, (end - start).days // 7 + 1))
    return effective_by_week_figure(
        effective_by_week(cluster=cluster, weeks=weeks, now=now),
        targets_for(cluster=cluster).effective_rate,
    )


def _checkpoints(cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime) -> dict:
    """Checkpoint cost per running job and what the advised interval would save."""
    return checkpoint_cost_figure(checkpoint_report(cluster=cluster, now=now))


mfu_chart = _chart(_mfu)
availability_chart = _chart(_availability)
availability_heatmap_chart = _chart(_heatmap)
effective_chart = _chart(_effective)
checkpoint_chart = _chart(_checkpoints)


@role_required()
def job_effective_fragment(request: HttpRequest, pk: int) -> HttpResponse:
    """The job page's effective-rate panel: whole run, this week, checkpoint advice."""
    job = get_object_or_404(Job.objects.select_related("cluster"), pk=pk)
    return render(
        request,
        "reports/_job_effective.html",
        {
            "job": job,
            "e": job_effective(job=job, now=timezone.now()),
            "targets": targets_for(cluster=job.cluster),
        },
    )
