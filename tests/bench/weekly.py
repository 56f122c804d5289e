"""Weekly report benchmark (issue 6): the report page and API, its downloads, every chart
endpoint (with its largest trace), against /healthz and a raw read of the week's samples."""

from __future__ import annotations

import datetime as dt
import json

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.jobs.models import JobMetric
from apps.reports.weekly import week_label, week_start
from tests.bench.timing import median_ms


def _largest_trace(body: bytes) -> int:
    fig = json.loads(body)
    sizes = [len(t.get("x") or []) * (len(t["z"]) if "z" in t else 1) for t in fig["data"]]
    return max(sizes, default=0)


def bench_weekly(client: Client, repeat: int = 15) -> None:
    """Print the figures."""
    now = timezone.now()
    start = week_start(now) - dt.timedelta(weeks=1)
    week = week_label(start)
    samples = JobMetric.objects.filter(ts__gte=start, ts__lt=start + dt.timedelta(weeks=1))
    raw_ms = median_ms(
        lambda: list(samples.values_list("job_id", "step_time_s", "tokens_per_s")), 3
    )
    print(
        f"\nWeekly report, {week} (the last whole week); baseline: reading that week's "
        f"{samples.count():,} job-wide samples raw takes {raw_ms:.0f} ms"
    )
    print(f"{'endpoint':<34}{'median ms':>10}{'queries':>9}{'points':>8}   goal")
    rows = (
        ("baseline /healthz", "/healthz", ""),
        ("weekly report page", f"/reports/weekly/?week={week}", "≤ 300 ms"),
        ("API reports/weekly", f"/api/v1/reports/weekly/?week={week}", "≤ 300 ms"),
        ("API reports/availability, 30 d", "/api/v1/reports/availability/", "≤ 300 ms"),
        ("weekly CSV (figures)", f"/reports/weekly.csv?week={week}", ""),
        ("weekly ZIP (every table)", f"/reports/weekly.zip?week={week}", ""),
        ("weekly PDF", f"/reports/weekly.pdf?week={week}", ""),
        ("chart: MFU, 30 d", "/charts/reports/mfu.json", "≤ 200 ms, ≤ 2,000 pts"),
        ("chart: availability, 30 d", "/charts/reports/availability.json", "≤ 200 ms, ≤ 2,000 pts"),
        (
            "chart: node × day, 30 d",
            "/charts/reports/availability-heatmap.json",
            "≤ 200 ms, ≤ 2,000 pts",
        ),
        ("chart: effective by week", "/charts/reports/effective.json", "≤ 200 ms, ≤ 2,000 pts"),
        ("chart: checkpoint cost", "/charts/reports/checkpoints.json", "≤ 200 ms, ≤ 2,000 pts"),
        ("trends page", "/reports/trends/", "≤ 300 ms"),
    )
    for label, path, goal in rows:

        def get(path: str = path) -> bytes:
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)
            return response.content

        ms = median_ms(get, repeat)
        with CaptureQueriesContext(connection) as queries:
            body = get()
        points = _largest_trace(body) if path.startswith("/charts/") else ""
        print(f"{label:<34}{ms:>10.1f}{len(queries):>9}{points!s:>8}   {goal}")
