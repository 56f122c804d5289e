"""The weekly report as tidy tables for analysts (`/reports/weekly.csv` and `.zip`). Pure.

One observation per row and one variable per column, so a file loads as it is and the same
file of every week and cluster can be stacked: every table starts with `cluster` and
`week`. Numbers are plain numbers at full precision (0.9794, 170807.0; rates and shares
are fractions of 1, never percentages), units are in the column names (`_gpu_hours`,
`_minutes`, `_seconds`), times are ISO 8601 UTC (`2026-11-16T00:00:00Z`), yes/no is
`true`/`false`, a figure there is none of (no failure, no MFU reported) is an empty cell,
and a category is two columns: its slug (stable, for joins) and its label (for people).
Text goes through `csvsafe`, so no title or job name is a live formula in a spreadsheet.

- `headline.csv` — one row: the week's figures and their targets (also `weekly.csv`);
- `losses.csv` — lost GPU-hours by cause (they add up to the headline's);
- `downtime.csv` — the failures' downtime by part: detect, localise, mitigate, restart (they
  add up to `losses.csv`'s downtime);
- `categories.csv` — incidents and lost GPU-hours by incident category;
- `jobs.csv` — every job that ran in the week;
- `incidents.csv` — the incidents behind the lost hours;
- `phases.csv` — time in the run not spent training, by phase (not part of the rate);
- `columns.csv` — what each column of each file holds.
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from apps.common import csvsafe
from apps.reports.choices import DOWNTIME_PARTS, LOSS_CAUSES
from apps.reports.downtime import downtime_parts

Row = dict[str, Any]


@dataclass(frozen=True)
class Column:
    """A column: its name (with its unit), what it holds, and its value for a row of the
    table (given the whole report too)."""

    name: str
    about: str
    value: Callable[[dict[str, Any], Row], object]


@dataclass(frozen=True)
class Table:
    """A file of the export: its name, what one row is, its columns, and its rows."""

    name: str
    row_is: str
    columns: tuple[Column, ...]
    rows: Callable[[dict[str, Any]], Iterable[Row]]


def utc(value: dt.datetime) -> str:
    """`2026-11-16T00:00:00Z`: ISO 8601 in UTC, to the second."""
    return value.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def plain(value: object) -> object:
    """A cell as an analyst's tools read it: None blank, booleans `true`/`false`, times ISO
    UTC, choices their slug, numbers and text as they are."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return utc(value)
    if isinstance(value, str):
        return str(value)  # a TextChoices member → its plain slug
    return value


def _field(key: str) -> Callable[[dict[str, Any], Row], object]:
    return lambda _report, row: row[key]


def _report(key: str) -> Callable[[dict[str, Any], Row], object]:
    return lambda report, _row: report[key]


KEYS = (
    Column("cluster", "the cluster's name", _report("cluster")),
    Column(
        "week", "the ISO week, e.g. 2026-W47 (weeks start on Monday 00:00 UTC)", _report("week")
    ),
)


def _target(key: str) -> Callable[[dict[str, Any], Row], object]:
    return lambda report, _row: report["targets"][key]


def _part(part: str) -> Column:
    return Column(
        f"failure_downtime_{part}_gpu_hours",
        f"of the failures' downtime, GPU-hours in its {part} part (downtime.csv)",
        lambda report, _row: report["downtime_breakdown_gpu_hours"][part],
    )


RECOVERY = (
    ("p50", "median"),
    ("p90", "90th percentile"),
    ("max", "longest"),
)


def _recovery(key: str, about: str) -> Column:
    return Column(
        f"recovery_minutes_{key}",
        f"{about} of the minutes from failure to training resumed, over the week's "
        "recovered unexpected interruptions; blank: none",
        lambda report, _row: report["recovery_minutes"][key],
    )


HEADLINE = Table(
    "headline",
    "the week",
    (
        *KEYS,
        Column("week_start_utc", "start of the week", _report("start")),
        Column("week_end_utc", "end of the week", lambda r, _: r["start"] + dt.timedelta(weeks=1)),
        Column(
            "complete",
            "false while the week is still in progress: its figures are so far",
            _report("complete"),
        ),
        Column(
            "figures_until_utc",
            "the figures cover the week up to this time (its end, or when read if in progress)",
            _report("end"),
        ),
        Column(
            "effective_rate",
            "productive ÷ scheduled GPU-hours of the week's jobs, a fraction of 1",
            _report("effective_rate"),
        ),
        Column(
            "effective_rate_target",
            "the cluster's floor for it, a fraction",
            _target("effective_rate"),
        ),
        Column(
            "cluster_mtbf_hours",
            "mean time between unexpected interruptions of the cluster; blank: none",
            _report("mtbf_hours"),
        ),
        Column("cluster_mtbf_target_hours", "the cluster's floor for it", _target("mtbf_hours")),
        Column(
            "gpu_availability",
            "share of GPU time the nodes were fit to run work, a fraction",
            _report("availability"),
        ),
        Column(
            "gpu_availability_target",
            "the cluster's floor for it, a fraction",
            _target("availability"),
        ),
        Column(
            "mean_mfu",
            "model FLOPs utilisation of the week's jobs, weighted by their GPUs, a fraction",
            _report("mean_mfu"),
        ),
        Column("mean_mfu_target", "the cluster's floor for it, a fraction", _target("mean_mfu")),
        Column(
            "mfu_best_public",
            "the best MFU published for a large run: a reference, not a target",
            _report("mfu_reference"),
        ),
        Column(
            "unexpected_interruptions",
            "interruptions by failures (count)",
            _report("interruptions"),
        ),
        Column(
            "planned_interruptions",
            "interruptions by planned work (count)",
            _report("planned_interruptions"),
        ),
        Column(
            "mttr_minutes",
            "mean time to recover from an interruption; blank: none",
            _report("mttr_minutes"),
        ),
        Column(
            "scheduled_gpu_hours",
            "GPU-hours the week's jobs held (GPUs × wall-clock hours)",
            _report("scheduled_gpu_hours"),
        ),
        Column(
            "productive_gpu_hours",
            "scheduled GPU-hours less the lost ones",
            _report("productive_gpu_hours"),
        ),
        Column(
            "lost_gpu_hours",
            "GPU-hours lost to every cause (losses.csv splits them)",
            lambda r, _: sum(r["lost_gpu_hours"].values()),
        ),
        # Added by issue 43, after every earlier column (a stacked series keeps its columns).
        *(_part(p.value) for p in DOWNTIME_PARTS),
        Column(
            "not_training_gpu_hours",
            "time in the run not spent training: GPU-hours of the phases the jobs reported "
            "(phases.csv splits them); not part of the effective rate",
            lambda r, _: sum(r["phase_gpu_hours"].values()),
        ),
        *(_recovery(k, about) for k, about in RECOVERY),
    ),
    lambda report: [report],
)


def _losses(report: dict[str, Any]) -> list[Row]:
    scheduled = report["scheduled_gpu_hours"]
    return [
        {
            "cause": cause.value,
            "cause_label": str(cause.label),
            "lost_gpu_hours": report["lost_gpu_hours"][cause],
            "share": report["lost_gpu_hours"][cause] / scheduled if scheduled else None,
        }
        for cause in LOSS_CAUSES
    ]


LOSSES = Table(
    "losses",
    "a cause of lost GPU-hours",
    (
        *KEYS,
        Column(
            "cause",
            "downtime (failures), planned (planned downtime), rework (work since the last "
            "checkpoint, redone), checkpoint (time blocked saving checkpoints)",
            _field("cause"),
        ),
        Column("cause_label", "the cause in words", _field("cause_label")),
        Column("lost_gpu_hours", "GPU-hours lost to it", _field("lost_gpu_hours")),
        Column(
            "share_of_scheduled",
            "its share of the scheduled GPU-hours, a fraction; blank: nothing scheduled",
            _field("share"),
        ),
    ),
    _losses,
)

DOWNTIME = Table(
    "downtime",
    "a part of the failures' downtime",
    (
        *KEYS,
        Column(
            "part",
            "detect (failure to detected), localise (detected to localised), mitigate "
            "(localised to mitigated), restart (mitigated to training resumed)",
            _field("part"),
        ),
        Column("part_label", "the part in words", _field("label")),
        Column("from_to", "the times it runs between", _field("span")),
        Column("lost_gpu_hours", "GPU-hours of failure downtime in it", _field("gpu_hours")),
        Column(
            "share_of_downtime",
            "its share of the failures' downtime, a fraction; blank: no downtime",
            _field("share"),
        ),
    ),
    downtime_parts,
)

CATEGORIES = Table(
    "categories",
    "an incident category that cost GPU-hours in the week",
    (
        *KEYS,
        Column("category", "the category's slug", _field("category")),
        Column("category_label", "the category in words", _field("label")),
        Column("incidents", "incidents of the category behind lost hours (count)", _field("count")),
        Column(
            "lost_gpu_hours",
            "GPU-hours they cost in the week",
            _field("lost_gpu_hours"),
        ),
    ),
    lambda report: report["lost_by_category"],
)


def _lost_by(cause: str) -> Column:
    return Column(
        f"lost_gpu_hours_{cause}",
        f"of which {cause} (see losses.csv)",
        lambda _report, job: job["lost_gpu_hours"][cause],
    )


JOBS = Table(
    "jobs",
    "a job that ran in the week, costliest first",
    (
        *KEYS,
        Column("job_id", "the job's number in KUAE Ops", _field("id")),
        Column("job_name", "the job's name", _field("name")),
        Column("gpus", "GPUs the job holds", _field("gpu_count")),
        Column("wall_clock_hours", "hours it ran within the week", _field("wall_hours")),
        Column("scheduled_gpu_hours", "GPUs × wall-clock hours", _field("scheduled_gpu_hours")),
        Column(
            "lost_gpu_hours",
            "GPUs × hours lost, every cause (what the jobs are ranked by)",
            _field("lost_gpu_hours_total"),
        ),
        *(_lost_by(c.value) for c in LOSS_CAUSES),
        Column(
            "effective_rate",
            "its productive share of the week, a fraction",
            _field("effective_rate"),
        ),
        Column(
            "mean_mfu",
            "its mean MFU in the week, a fraction; blank: not reported",
            _field("mean_mfu"),
        ),
    ),
    lambda report: report["jobs"],
)

INCIDENTS = Table(
    "incidents",
    "an incident behind lost GPU-hours in the week, costliest first",
    (
        *KEYS,
        Column("incident_id", "the incident's number", _field("id")),
        Column("title", "its title", _field("title")),
        Column("category", "the category's slug", _field("category")),
        Column("category_label", "the category in words", _field("category_label")),
        Column("severity", "sev1 (worst) to sev4", _field("severity")),
        Column("status", "its status when the file was made", _field("status")),
        Column("planned", "true: planned work, not a failure", _field("planned")),
        Column(
            "recovered",
            "false: not yet recovered, its cost still grows",
            _field("recovered"),
        ),
        Column(
            "lost_gpu_hours_this_week",
            "its share of the week's lost GPU-hours",
            _field("week_lost_gpu_hours"),
        ),
        Column(
            "lost_gpu_hours_total",
            "its whole cost: to recovery, or to generated_at_utc while not recovered",
            _field("lost_gpu_hours"),
        ),
        Column("downtime_seconds", "its jobs' downtime", _field("downtime_s")),
        Column(
            "rework_seconds", "work its jobs redo since their last checkpoint", _field("rework_s")
        ),
        Column(
            "generated_at_utc",
            "when the file was made (the time a cost still growing is read at)",
            lambda report, _: report["generated_at"],
        ),
    ),
    lambda report: report["incidents"],
)

PHASES = Table(
    "phases",
    "a phase of the runs that is not training (start-up, checkpoint restore, evaluation…)",
    (
        *KEYS,
        Column("phase", "the phase's name, as the training Reporter sent it", _field("phase")),
        Column(
            "gpu_hours",
            "GPU-hours of it inside the week; not part of the effective rate",
            _field("gpu_hours"),
        ),
    ),
    lambda report: [{"phase": k, "gpu_hours": v} for k, v in report["phase_gpu_hours"].items()],
)

TABLES = (HEADLINE, LOSSES, DOWNTIME, CATEGORIES, JOBS, INCIDENTS, PHASES)


def table_csv(table: Table, report: dict[str, Any], *, now: dt.datetime) -> str:
    """One table as CSV text: a header of column names, then its rows."""
    report = {**report, "generated_at": now}
    out = io.StringIO()
    writer = csvsafe.writer(out)
    writer.writerow(c.name for c in table.columns)
    writer.writerows(
        [plain(c.value(report, row)) for c in table.columns] for row in table.rows(report)
    )
    return out.getvalue()


def columns_csv() -> str:
    """`columns.csv`: file, column and what it holds, for every table."""
    out = io.StringIO()
    writer = csvsafe.writer(out)
    writer.writerow(("file", "column", "description"))
    for table in TABLES:
        writer.writerow((f"{table.name}.csv", "", f"one row: {table.row_is}"))
        writer.writerows((f"{table.name}.csv", c.name, c.about) for c in table.columns)
    return out.getvalue()


def weekly_csv(report: dict[str, Any], *, now: dt.datetime) -> str:
    """`/reports/weekly.csv`: the headline table, one row a week."""
    return table_csv(HEADLINE, report, now=now)


def weekly_zip(report: dict[str, Any], *, now: dt.datetime, folder: str) -> bytes:
    """`/reports/weekly.zip`: every table and `columns.csv`, in `folder/`. The files' times
    are the week's start, so the same week read twice gives the same bytes."""
    stamp = report["start"].astimezone(dt.UTC).timetuple()[:6]
    files = [(f"{t.name}.csv", table_csv(t, report, now=now)) for t in TABLES]
    files.append(("columns.csv", columns_csv()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in files:
            info = zipfile.ZipInfo(f"{folder}/{name}", date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, text.encode("utf-8"))
    return buffer.getvalue()
