"""The weekly report: the page (headline figures against targets, where the GPU-hours went,
causes, jobs, incidents, a what-if) and its downloads: tidy CSV tables and the PDF."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.utils import timezone

from apps.accounts.permissions import role_required
from apps.common.weeks import WEEK, last_complete_week, week_label
from apps.reports.choices import LOSS_CAUSES
from apps.reports.downtime import downtime_parts
from apps.reports.export import weekly_pdf
from apps.reports.params import BadWeek, int_param, pick_cluster, week_param
from apps.reports.selectors import targets_for, whatif_projection
from apps.reports.weekly import weekly_report, weekly_trends
from apps.reports.weekly_charts import lost_by_category_figure, waterfall_figure
from apps.reports.weekly_tables import weekly_csv, weekly_zip


def _causes(report: dict[str, Any]) -> list[tuple[str, str, float, float | None]]:
    """Each cause of loss: (value, label, lost GPU-hours, share of the scheduled ones)."""
    scheduled = report["scheduled_gpu_hours"]
    lost = report["lost_gpu_hours"]
    return [
        (c.value, str(c.label), lost[c], lost[c] / scheduled if scheduled else None)
        for c in LOSS_CAUSES
    ]


@role_required()
def weekly_page(request: HttpRequest) -> HttpResponse:
    """Headline figures against targets and last week, where the GPU-hours went, causes,
    jobs, the incidents behind the lost hours, and a what-if for a larger run (`?gpus=`)."""
    cluster, names = pick_cluster(request)
    now = timezone.now()
    try:
        start, bad_week = week_param(request, now), ""
    except BadWeek as exc:
        # The default week, saying why (docs/formulas.md, Weekly effective training rate).
        start, bad_week = last_complete_week(now), str(exc)
    context: dict[str, Any] = {
        "clusters": names,
        "cluster": cluster,
        "now": now,
        "bad_week": bad_week,
    }
    if cluster is not None:
        peaks: dict[int, float | None] = {}  # each job's peak read once for both weeks
        report = weekly_report(cluster=cluster, start=start, now=now, peaks=peaks)
        previous = weekly_report(cluster=cluster, start=start - WEEK, now=now, peaks=peaks)
        gpus = int_param(request, "gpus", 16_384, 8, 1_000_000)
        context.update(
            r=report,
            prev=previous,
            week=report["week"],
            prev_week=week_label(start - WEEK),
            next_week=week_label(start + WEEK) if start + WEEK <= now else None,
            targets=targets_for(cluster=cluster),
            causes=_causes(report),
            parts=downtime_parts(report),
            lost_total=sum(report["lost_gpu_hours"].values()),
            prev_lost=sum(previous["lost_gpu_hours"].values()),
            waterfall=waterfall_figure(report),
            categories=lost_by_category_figure(report["lost_by_category"]),
            whatif=whatif_projection(cluster=cluster, now=now, gpus=gpus),
        )
    return render(request, "reports/weekly.html", context)


@role_required()
def weekly_download(request: HttpRequest, fmt: str) -> HttpResponse:
    """The week's report (every reader may export): `csv`, its headline figures as one tidy
    row; `zip`, every table as tidy CSV; `pdf`, the printable report."""
    cluster, _ = pick_cluster(request)
    if cluster is None:
        raise Http404("no cluster")
    now = timezone.now()
    try:
        start = week_param(request, now)
    except BadWeek as exc:
        return HttpResponseBadRequest(f"{exc}\n", content_type="text/plain; charset=utf-8")
    peaks: dict[int, float | None] = {}
    report = weekly_report(cluster=cluster, start=start, now=now, peaks=peaks)
    name = f"kuae-weekly-{cluster.name}-{report['week']}"
    if fmt == "csv":
        response = HttpResponse(weekly_csv(report, now=now), content_type="text/csv; charset=utf-8")
    elif fmt == "zip":
        response = HttpResponse(
            weekly_zip(report, now=now, folder=name), content_type="application/zip"
        )
    else:
        previous = weekly_report(cluster=cluster, start=start - WEEK, now=now, peaks=peaks)
        trends = weekly_trends(cluster=cluster, start=start, now=now)
        response = HttpResponse(
            weekly_pdf(report, previous, trends), content_type="application/pdf"
        )
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response
