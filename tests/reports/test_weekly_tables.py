"""The weekly report's tidy tables (apps/reports/weekly_tables.py), on a report written out
by hand: plain numbers, units in the names, ISO UTC times, slugs beside labels, keys on
every table, no live formula, a data dictionary that matches the files."""

from __future__ import annotations

import datetime as dt
import io
import zipfile

from apps.reports.weekly_tables import TABLES, columns_csv, weekly_csv, weekly_zip
from tests.reports.tables import rows, tables

START = dt.datetime(2026, 11, 16, tzinfo=dt.UTC)  # Monday of 2026-W47
NOW = dt.datetime(2026, 11, 25, 9, 30, 15, 123456, tzinfo=dt.UTC)
LOST = {"downtime": 1200.5, "planned": 300.0, "rework": 480.25, "checkpoint": 96.0}
PARTS = {"detect": 100.5, "localise": 300.0, "mitigate": 0.0, "restart": 800.0}


def report(**changes: object) -> dict:
    """A week of one 2,048-GPU job with one incident, as `weekly.weekly_report` answers."""
    base = {
        "cluster": "c1",
        "week": "2026-W47",
        "start": START,
        "end": START + dt.timedelta(weeks=1),
        "complete": True,
        "effective_rate": 0.9794117647058823,
        "scheduled_gpu_hours": 344064.0,
        "productive_gpu_hours": 344064.0 - sum(LOST.values()),
        "lost_gpu_hours": dict(LOST),
        "downtime_breakdown_gpu_hours": dict(PARTS),
        "phase_gpu_hours": {"eval": 40.5, "startup": 12.0},
        "recovery_minutes": {"p50": 30.0, "p90": 52.5, "max": 60.0},
        "mean_mfu": 0.4123,
        "interruptions": 3,
        "planned_interruptions": 1,
        "mtbf_hours": 56.0,
        "mttr_minutes": None,
        "availability": 0.9921,
        "targets": {
            "effective_rate": 0.99,
            "mtbf_hours": 360.0,
            "availability": 0.99,
            "mean_mfu": 0.5,
        },
        "mfu_reference": 0.6,
        "jobs": [
            {
                "id": 7,
                "name": '=HYPERLINK("http://x")',
                "gpu_count": 2048,
                "wall_hours": 168.0,
                "lost_hours": 1.0060546875,
                "scheduled_gpu_hours": 344064.0,
                "lost_gpu_hours_total": sum(LOST.values()),
                "effective_rate": 0.994,
                "mean_mfu": None,
                "lost_gpu_hours": dict(LOST),
            }
        ],
        "lost_by_category": [
            {
                "category": "gpu_hbm",
                "label": "GPU HBM memory",
                "count": 1,
                "lost_gpu_hours": 1680.75,
            }
        ],
        "incidents": [
            {
                "id": 12,
                "title": "-1 GPUs on gpu001",
                "category": "gpu_hbm",
                "category_label": "GPU HBM memory",
                "severity": "sev2",
                "status": "investigating",
                "planned": False,
                "recovered": False,
                "downtime_s": 1800.0,
                "rework_s": 900.0,
                "lost_gpu_hours": 2000.0,
                "week_lost_gpu_hours": 1680.75,
            }
        ],
    }
    return {**base, **changes}


def test_weekly_csv_is_one_tidy_row_of_plain_numbers():
    [row] = rows(weekly_csv(report(), now=NOW))
    assert row["cluster"] == "c1" and row["week"] == "2026-W47" and row["complete"] == "true"
    assert row["week_start_utc"] == "2026-11-16T00:00:00Z"
    assert row["week_end_utc"] == row["figures_until_utc"] == "2026-11-23T00:00:00Z"
    assert row["effective_rate"] == "0.9794117647058823"  # a fraction, full precision
    assert row["scheduled_gpu_hours"] == "344064.0"  # no thousands separator
    assert float(row["lost_gpu_hours"]) == sum(LOST.values())
    assert row["mttr_minutes"] == ""  # none: an empty cell, not "—" or "None"
    assert row["cluster_mtbf_target_hours"] == "360.0" and row["mfu_best_public"] == "0.6"
    assert all("%" not in v and "," not in v for v in row.values())


def test_a_week_in_progress_says_so_and_until_when():
    [row] = rows(weekly_csv(report(complete=False, end=NOW), now=NOW))
    assert row["complete"] == "false" and row["figures_until_utc"] == "2026-11-25T09:30:15Z"


def test_every_table_has_the_keys_and_units_in_its_column_names():
    files = tables(weekly_zip(report(), now=NOW, folder="kuae-weekly-c1-2026-W47"))
    for name in ("headline", "losses", "categories", "jobs", "incidents"):
        assert list(files[name][0])[:2] == ["cluster", "week"], name
        assert all(r["cluster"] == "c1" and r["week"] == "2026-W47" for r in files[name])
    losses = {r["cause"]: r for r in files["losses"]}
    assert list(losses) == ["downtime", "planned", "rework", "checkpoint"]
    assert losses["rework"]["cause_label"] == "rework since checkpoint"
    assert float(losses["downtime"]["share_of_scheduled"]) == 1200.5 / 344064.0
    total = sum(float(r["lost_gpu_hours"]) for r in files["losses"])
    assert total == float(files["headline"][0]["lost_gpu_hours"])  # they add up
    [job] = files["jobs"]
    assert job["job_name"] == '\'=HYPERLINK("http://x")'  # text, never a live formula
    assert (job["gpus"], job["mean_mfu"]) == ("2048", "")
    assert float(job["lost_gpu_hours_rework"]) == 480.25
    [incident] = files["incidents"]
    assert incident["title"] == "'-1 GPUs on gpu001"
    assert (incident["category"], incident["category_label"]) == ("gpu_hbm", "GPU HBM memory")
    assert (incident["planned"], incident["recovered"]) == ("false", "false")
    assert incident["downtime_seconds"] == "1800.0"
    assert incident["generated_at_utc"] == "2026-11-25T09:30:15Z"
    [category] = files["categories"]
    assert (category["category"], category["incidents"]) == ("gpu_hbm", "1")


def test_the_data_dictionary_describes_every_column_of_every_file():
    described = {(r["file"], r["column"]) for r in rows(columns_csv()) if r["column"]}
    files = tables(weekly_zip(report(), now=NOW, folder="w"))
    shown = {
        (f"{name}.csv", column)
        for name, got in files.items()
        if name != "columns"
        for column in got[0]
    }
    assert shown == described
    assert all(r["description"] for r in rows(columns_csv()))
    assert {t.name for t in TABLES} | {"columns"} == set(files)


def test_the_zip_is_one_folder_and_the_same_bytes_for_the_same_week():
    first = weekly_zip(report(), now=NOW, folder="kuae-weekly-c1-2026-W47")
    assert first == weekly_zip(report(), now=NOW, folder="kuae-weekly-c1-2026-W47")
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        names = archive.namelist()
        assert all(n.startswith("kuae-weekly-c1-2026-W47/") for n in names)
        assert archive.getinfo(names[0]).date_time == (2026, 11, 16, 0, 0, 0)
        assert archive.testzip() is None


def test_an_empty_week_still_has_every_header():
    empty = report(jobs=[], incidents=[], lost_by_category=[], effective_rate=None)
    with zipfile.ZipFile(io.BytesIO(weekly_zip(empty, now=NOW, folder="w"))) as archive:
        jobs = archive.read("w/jobs.csv").decode()
    assert jobs.startswith('"cluster","week","job_id","job_name","gpus","wall_clock_hours",')
    assert jobs.count("\n") == 1
    [row] = rows(weekly_csv(empty, now=NOW))
    assert row["effective_rate"] == ""
