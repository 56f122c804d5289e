"""The weekly report (docs/formulas.md, Weekly effective training rate) and week-by-week series."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from apps.common.weeks import WEEK, week_label, week_start
from apps.fleet.models import Cluster
from apps.incidents.choices import category_label
from apps.reports.availability_days import window_availability
from apps.reports.effective import weekly
from apps.reports.inputs import incident_facts, job_runs, phase_spans
from apps.reports.models import Snapshot
from apps.reports.selectors import reliability_report, targets_for, weekly_reliability
from apps.reports.targets import MFU_REFERENCE


def weekly_report(
    *,
    cluster: Cluster,
    start: dt.datetime,
    now: dt.datetime,
    peaks: dict[int, float | None] | None = None,
) -> dict[str, Any]:
    """Every field of docs/formulas.md, Weekly effective training rate, for the ISO week starting
    `start`, plus the incidents behind the lost hours and their categories. `peaks`: the
    jobs' peaks shared between the reports of one answer (`inputs.job_runs`)."""
    end = start + WEEK
    runs = job_runs(cluster=cluster, start=start, end=end, peaks=peaks)
    report = weekly(runs, start=start, end=end, now=now)
    rel = reliability_report(cluster=cluster, start=start, end=end, now=now, job_nodes=128)
    avail = window_availability(cluster=cluster, start=start, end=end, now=now)
    cut = min(end, now)
    phases = phase_gpu_hours(phase_spans(cluster=cluster, start=start, end=cut), start, cut)
    lost_by_incident = report.pop("by_incident")
    facts = incident_facts(list(lost_by_incident), now=now)
    # Each incident's own cost (to now if it is not yet recovered: the figure every page
    # shows for it) and its share of this week's lost GPU-hours (clipped to the week,
    # overlaps counted once).
    incidents = sorted(
        (
            {**facts[pk], "week_lost_gpu_hours": hours}
            for pk, hours in lost_by_incident.items()
            if pk in facts
        ),
        key=lambda r: (-r["week_lost_gpu_hours"], r["id"]),
    )
    by_category: dict[str, dict[str, float]] = defaultdict(lambda: {"count": 0, "lost": 0.0})
    for row in incidents:
        by_category[row["category"]]["count"] += 1
        by_category[row["category"]]["lost"] += row["week_lost_gpu_hours"]
    return {
        "cluster": cluster.name,
        "week": week_label(start),
        "start": start,
        "end": min(end, now),
        "complete": end <= now,  # false: a week still in progress, its figures so far
        **report,
        "phase_gpu_hours": phases,
        "interruptions": rel["interruptions"],
        "planned_interruptions": rel["planned_interruptions"],
        "mtbf_hours": rel["mtbf_hours"],
        "mtbf_level": "cluster",
        "mttr_minutes": rel["mttr_minutes"],
        "recovery_minutes": rel["recovery_minutes"],
        "availability": avail,
        "targets": targets_for(cluster=cluster).floors(),
        "mfu_reference": MFU_REFERENCE,
        "lost_by_category": sorted(
            (
                {
                    "category": c,
                    "label": category_label(c),
                    "count": int(v["count"]),
                    "lost_gpu_hours": v["lost"],
                }
                for c, v in by_category.items()
            ),
            key=lambda r: -r["lost_gpu_hours"],
        ),
        "incidents": incidents,
    }


def phase_gpu_hours(
    spans: Iterable[tuple[str, dt.datetime, dt.datetime, int]],
    start: dt.datetime,
    end: dt.datetime,
) -> dict[str, float]:
    """GPU-hours by phase name: each phase cut to [start, end), times its job's GPUs
    (docs/formulas.md, Time in the run not spent training); not part of the effective rate.
    Largest first; names with nothing inside the window are left out."""
    totals: dict[str, float] = defaultdict(float)
    for name, began, ended, gpus in spans:
        seconds = (min(ended, end) - max(began, start)).total_seconds()
        if seconds > 0:
            totals[name] += seconds * gpus / 3600.0
    return dict(sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])))


def effective_by_week(
    *, cluster: Cluster, weeks: int, now: dt.datetime, last: dt.datetime | None = None
) -> list[dict[str, Any]]:
    """Effective rate and lost GPU-hours for each of the `weeks` ISO weeks up to the one
    starting `last` (default: this week); the inputs of the whole span are loaded once."""
    first = (last or week_start(now)) - (weeks - 1) * WEEK
    runs = job_runs(cluster=cluster, start=first, end=now, with_mfu=False)
    out: list[dict[str, Any]] = []
    for k in range(weeks):
        start = first + k * WEEK
        w = weekly(runs, start=start, end=start + WEEK, now=now)
        if not w["scheduled_gpu_hours"] and not out:
            continue  # before the first job: nothing to show
        complete = start + WEEK <= now
        out.append(
            {
                "week": week_label(start),
                "label": week_label(start) + ("" if complete else " (so far)"),
                "complete": complete,
                "start": start,
                "effective_rate": w["effective_rate"],
                "scheduled_gpu_hours": w["scheduled_gpu_hours"],
                "lost_gpu_hours": w["lost_gpu_hours"],
            }
        )
    return out


def weekly_trends(
    *, cluster: Cluster, start: dt.datetime, now: dt.datetime, weeks: int = 8
) -> dict[str, list[dict[str, Any]]]:
    """The `weeks` ISO weeks up to the report's (starting `start`) since the first job, for
    the PDF's trend charts: effective rate and lost GPU-hours (`effective`), cluster MTBF
    (`reliability`)."""
    effective = effective_by_week(cluster=cluster, weeks=weeks, now=now, last=start)
    reliability = weekly_reliability(cluster=cluster, weeks=weeks, now=now, last=start)
    since = effective[0]["week"] if effective else ""  # the weeks since the first job
    return {
        "effective": effective,
        "reliability": [w for w in reliability if str(w["week"]) >= since],
    }


SNAPSHOT_MAX_AGE = dt.timedelta(minutes=5)


def week_so_far_key(cluster_id: int) -> str:
    """The key of a cluster's week-so-far snapshot row."""
    return f"week-so-far:{cluster_id}"


def week_so_far_compute(*, cluster: Cluster, now: dt.datetime) -> dict[str, Any]:
    """This week's effective rate so far and the 30-day cluster MTBF, computed now (a read:
    storing it is `services.snapshot_refresh`'s)."""
    start = week_start(now)
    runs = job_runs(cluster=cluster, start=start, end=now, with_mfu=False)
    rel = reliability_report(
        cluster=cluster, start=now - dt.timedelta(days=30), end=now, now=now, job_nodes=128
    )
    return {
        "effective_rate": weekly(runs, start=start, end=now, now=now)["effective_rate"],
        "mtbf_hours": rel["mtbf_hours"],
        "interruptions": rel["interruptions"],
    }


def week_so_far(*, cluster: Cluster, now: dt.datetime) -> dict[str, Any]:
    """The overview's slow KPIs from their snapshot (beat refreshes it every minute; the
    overview is polled by every open screen). When the row is missing or older than five
    minutes — beat not running — they are computed for this answer and not stored: a read
    never writes."""
    row = Snapshot.objects.filter(key=week_so_far_key(cluster.pk)).first()
    if row is not None and now - row.computed_at < SNAPSHOT_MAX_AGE:
        return {**row.data, "at": row.computed_at}
    return {**week_so_far_compute(cluster=cluster, now=now), "at": now}
