"""Reads behind the charts an operator keeps open: cluster and per-job MFU by hour, GPU
availability by hour and node × day, checkpoint cost and advice per job."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from apps.common.dbfuncs import Epoch
from apps.common.weeks import week_start
from apps.fleet.models import Cluster
from apps.jobs.mfu import finite, flops_per_token, mfu_factor, mfu_of
from apps.jobs.models import Job, JobMetricHour
from apps.jobs.peaks import job_peaks
from apps.reports.availability import bucket_seconds, service_window, unavailable
from apps.reports.effective import JobRun, job_week, weekly
from apps.reports.inputs import job_runs, node_histories
from apps.reports.planning import Advice, checkpoint_advice
from apps.reports.selectors import node_mtbf_hours

TOP_JOBS = 8
HEATMAP_NODES = 60  # × 31 days stays under 2,000 cells


def _hours(start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    first = start.replace(minute=0, second=0, microsecond=0)
    n = int((end - first).total_seconds() // 3600) + 1
    return [first + dt.timedelta(hours=k) for k in range(n)]


def mfu_by_hour(*, cluster: Cluster, start: dt.datetime, end: dt.datetime) -> dict[str, Any]:
    """Cluster MFU per hour (GPU-weighted over the jobs with samples that hour, each job's as
    in docs/formulas.md, MFU) and the largest jobs' own hourly MFU."""
    jobs = {
        j["id"]: j
        for j in Job.objects.filter(cluster=cluster, hours__hour__gte=start, hours__hour__lt=end)
        .distinct()
        .values("id", "name", "gpu_count", "n_params", "flops_per_token")
    }
    peaks = job_peaks(cluster, list(jobs))
    factor = {
        pk: mfu_factor(
            fpt=flops_per_token(flops_per_token=j["flops_per_token"], n_params=j["n_params"]),
            gpu_count=j["gpu_count"],
            peak_tflops_per_gpu=peaks[pk] or 0.0,  # 0: peak unknown, no MFU
        )
        for pk, j in jobs.items()
    }
    per_job: dict[int, dict[int, float]] = defaultdict(dict)  # job → epoch hour → MFU
    for job_id, hour, w, x in JobMetricHour.objects.filter(
        job_id__in=list(jobs), hour__gte=start, hour__lt=end
    ).values_list("job_id", Epoch("hour"), "step_s_sum", "tps_step_sum"):
        value = mfu_of(x / w, factor[job_id] or None) if w else None
        if value is not None:
            per_job[job_id][round(hour)] = value
    hours = _hours(start, end)
    keys = [round(h.timestamp()) for h in hours]
    cluster_mfu = []
    for h in keys:
        pairs = [(jobs[j]["gpu_count"], s[h]) for j, s in per_job.items() if h in s]
        gpus = sum(g for g, _ in pairs)
        cluster_mfu.append(finite(sum(g * m for g, m in pairs) / gpus) if gpus else None)
    top = sorted(per_job, key=lambda j: (-jobs[j]["gpu_count"], j))[:TOP_JOBS]
    return {
        "hours": hours,
        "cluster": cluster_mfu,
        "jobs": [
            {
                "id": j,
                "name": jobs[j]["name"],
                "gpu_count": jobs[j]["gpu_count"],
                "mfu": [per_job[j].get(h) for h in keys],
            }
            for j in top
        ],
    }


def availability_by_time(
    *, cluster: Cluster, start: dt.datetime, end: dt.datetime, now: dt.datetime
) -> dict[str, Any]:
    """GPU availability per hour, and per node per day for the nodes that lost most time."""
    end = min(end, now)
    nodes = node_histories(cluster=cluster, start=start, end=end)
    hours = _hours(start, end)
    edges = [*hours, hours[-1] + dt.timedelta(hours=1)]
    day0 = start.replace(hour=0, minute=0, second=0, microsecond=0)
    days = [day0 + dt.timedelta(days=k) for k in range((end - day0).days + 1)]
    day_edges = [*days, days[-1] + dt.timedelta(days=1)]
    down = [0.0] * len(hours)
    gpus_by_window: dict[tuple[dt.datetime, dt.datetime], int] = defaultdict(int)
    for node in nodes:  # most nodes share one window: bucket each distinct window once
        if (window := service_window(node, start, end, now)) is not None:
            gpus_by_window[window] += node.gpu_count
    total = [0.0] * len(hours)
    for window, gpus in gpus_by_window.items():
        for k, secs in enumerate(bucket_seconds([window], edges)):
            total[k] += gpus * secs
    worst = []
    for node in nodes:
        window = service_window(node, start, end, now)
        if window is None:
            continue
        gaps = unavailable(node, start, end, now)
        if not gaps:
            continue
        for k, secs in enumerate(bucket_seconds(gaps, edges)):
            down[k] += node.gpu_count * secs
        in_day = bucket_seconds([window], day_edges)
        lost_day = bucket_seconds(gaps, day_edges)
        worst.append(
            (
                sum(lost_day),
                node.hostname,
                [1 - d / s if s else None for d, s in zip(lost_day, in_day, strict=True)],
            )
        )
    worst.sort(key=lambda r: (-r[0], r[1]))
    return {
        "hours": hours,
        "availability": [1 - d / t if t else None for d, t in zip(down, total, strict=True)],
        "days": days,
        "heatmap": [{"hostname": h, "by_day": v} for _, h, v in worst[:HEATMAP_NODES]],
    }


def checkpoint_report(
    *, cluster: Cluster, now: dt.datetime, days: int = 30
) -> list[dict[str, Any]]:
    """Per running job: checkpoint GPU-hours in the last 7 days, and
    Young/Daly advice from its checkpoints and its measured failure rate (else the interval
    projected from the cluster's node MTBF)."""
    start = now - dt.timedelta(days=days)
    runs = job_runs(cluster=cluster, start=start, end=now, with_mfu=False)
    node_mtbf = node_mtbf_hours(cluster=cluster, start=start, now=now)
    week = {
        j["id"]: j for j in weekly(runs, start=now - dt.timedelta(days=7), end=now, now=now)["jobs"]
    }
    out = []
    for run in runs:
        if run.ended_at is not None:  # advice is for jobs still running
            continue
        advice = _advice(run, cluster=cluster, start=start, now=now, node_mtbf=node_mtbf)
        if advice is None:
            continue
        out.append(
            {
                "id": run.id,
                "name": run.name,
                "gpu_count": run.gpu_count,
                "checkpoint_gpu_hours_7d": week.get(run.id, {})
                .get("lost_gpu_hours", {})
                .get("checkpoint", 0.0),
                "advice": advice,
            }
        )
    out.sort(key=lambda r: -r["advice"].gpu_hours_saved_per_week)
    return out


def _advice(
    run: JobRun,
    *,
    cluster: Cluster,
    start: dt.datetime,
    now: dt.datetime,
    node_mtbf: float | None,
) -> Advice | None:
    """Young/Daly for one job from its checkpoints since `start` and its measured failure
    rate, else the MTBF projected from the cluster's node MTBF."""
    wall_h = (min(run.ended_at or now, now) - max(run.started_at, start)).total_seconds() / 3600
    failures = sum(1 for i in run.interruptions if not i.planned and i.failed_at >= start)
    nodes = max(1, run.gpu_count // max(cluster.gpus_per_node, 1))
    if failures:
        mtbf = wall_h / failures
        source = ngettext("measured: %(n)s failure", "measured: %(n)s failures", failures) % {
            "n": f"{failures:,}"
        }
    elif node_mtbf:
        mtbf = node_mtbf / nodes
        source = ngettext(
            "projected: node MTBF / %(n)s node", "projected: node MTBF / %(n)s nodes", nodes
        ) % {"n": f"{nodes:,}"}
    else:
        return None
    saves = [(t.timestamp(), b) for t, b in run.checkpoints if t >= start and b > 0]
    return checkpoint_advice(
        gpu_count=run.gpu_count, saves=saves, mtbf_hours=mtbf, mtbf_source=source
    )


def job_effective(*, job: Job, now: dt.datetime, days: int = 30) -> dict[str, Any] | None:
    """A job's effective rate and lost hours over its whole run and this week, and its
    checkpoint advice (from its last `days`)."""
    if job.started_at is None:
        return None
    runs = job_runs(cluster=job.cluster, start=job.started_at, end=now, only=job.pk)
    if not runs:
        return None
    run = runs[0]
    whole = job_week(run, start=job.started_at, end=now, now=now)
    this_week = job_week(run, start=week_start(now), end=now, now=now)
    start = now - dt.timedelta(days=days)
    node_mtbf = node_mtbf_hours(cluster=job.cluster, start=start, now=now)
    return {
        "rows": [(_("Whole run"), whole), (_("This week so far"), this_week)],
        "advice": _advice(run, cluster=job.cluster, start=start, now=now, node_mtbf=node_mtbf),
    }
