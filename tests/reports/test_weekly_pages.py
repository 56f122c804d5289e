"""The weekly report page, its CSV, ZIP and PDF, the trends page and its chart endpoints, over a
simulated cluster (the simulator writes through the same services as the API)."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from apps.common.weeks import week_label, week_start
from tests.reports.tables import rows as table_rows
from tests.reports.tables import tables
from tests.reports.test_weekly_pdf import content, runs
from tests.support import simulate

pytestmark = pytest.mark.django_db
CHARTS = ("mfu", "availability", "availability-heatmap", "effective", "checkpoints")


@pytest.fixture(scope="module")
def simulated(module_rows) -> None:  # noqa: ANN001
    """The simulated cluster, written once for the module (tests/conftest.py)."""
    module_rows(simulate, gpus=512, days=16, seed=4, failure_rate=0.05)


@pytest.fixture
def sim(db, simulated) -> None:  # noqa: ANN001
    """Each test reads it inside its own transaction."""


def this_week() -> str:
    return week_label(week_start(timezone.now()))


@pytest.fixture
def last_week() -> str:
    return week_label(week_start(timezone.now()) - dt.timedelta(weeks=1))


def test_weekly_page_shows_targets_jobs_and_incidents(
    client, users, sim, last_week, django_assert_max_num_queries
):
    client.force_login(users["mia"])
    # 42: the availability of each week is one sum of the nodes' time in service, its
    # summed days (or, none summed here, the history of the nodes that changed): issue 46.
    with django_assert_max_num_queries(42):
        response = client.get(f"/reports/weekly/?week={last_week}")
    html = response.content.decode()
    assert response.status_code == 200
    api = client.get(f"/api/v1/reports/weekly/?week={last_week}").json()
    assert f"{100 * api['effective_rate']:.2f}%" in html  # the page shows the API's figure
    assert "target ≥ 99%" in html and "Where the GPU-hours went" in html
    assert all(j["name"] in html for j in api["jobs"][:5])
    assert all(f'href="/incidents/{i["id"]}/"' in html for i in api["incidents"])
    assert api["incidents"], "the simulated week should have lost hours to incidents"
    assert "Expected effective rate" in html  # the what-if projected something


def test_what_if_beyond_its_model_says_so(client, users, sim, last_week):
    """A million GPUs fail far more often than a repair takes: not "0.00%" but the model's
    limit and the uptime bound (issue 42)."""
    client.force_login(users["mia"])
    html = client.get(f"/reports/weekly/?week={last_week}&gpus=1000000").content.decode()
    rate = re.search(r"<dt>Expected effective rate</dt><dd>(.*?)</dd>", html, re.S)
    assert rate is not None
    assert "beyond this model" in rate.group(1) and "uptime alone" in rate.group(1)
    assert "0.00%" not in rate.group(1)


def test_a_bad_week_shows_the_default_week_and_names_the_parameter(client, users, sim, last_week):
    """docs/formulas.md, Weekly effective training rate: not a 404 "no page"."""
    client.force_login(users["mia"])
    for asked, said in (("garbage", "is not a week"), ("2999-W01", "has not started yet")):
        response = client.get(f"/reports/weekly/?week={asked}")
        html = response.content.decode()
        assert response.status_code == 200 and "There is no page" not in html
        alert = html[html.index('id="bad-week"') : html.index("</p>", html.index('id="bad-week"'))]
        assert f"week=&#x27;{asked}&#x27; {said}" in alert
        assert f"Showing the last complete week, {last_week}, instead" in alert
        assert f"Weekly report · kuae-sim · {last_week}" in html
    page = client.get("/reports/weekly/?week=garbage").content.decode()
    assert f"ISO week, year-W-week number, like {last_week}" in page
    csv = client.get("/reports/weekly.csv?week=garbage")
    assert csv.status_code == 400 and b"week='garbage' is not a week" in csv.content


def test_csv_zip_and_pdf_downloads(client, users, sim, last_week):
    client.force_login(users["mia"])
    api = client.get(f"/api/v1/reports/weekly/?week={last_week}").json()
    response = client.get(f"/reports/weekly.csv?week={last_week}")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert f"{last_week}.csv" in response["Content-Disposition"]
    [row] = table_rows(response.content.decode())  # one tidy row: the week's figures
    assert (row["cluster"], row["week"], row["complete"]) == ("kuae-sim", last_week, "true")
    assert float(row["effective_rate"]) == api["effective_rate"]  # a number, not "97.94%"
    assert float(row["scheduled_gpu_hours"]) == api["scheduled_gpu_hours"]
    archive = client.get(f"/reports/weekly.zip?week={last_week}")
    assert archive.status_code == 200 and archive["Content-Type"] == "application/zip"
    assert f"{last_week}.zip" in archive["Content-Disposition"]
    files = tables(archive.content)
    assert set(files) == {
        "headline",
        "losses",
        "downtime",
        "categories",
        "jobs",
        "incidents",
        "phases",
        "columns",
    }
    assert files["headline"] == [row]
    # The failure downtime by part, and the recovery minutes, as the API has them.
    parts = api["downtime_breakdown_gpu_hours"]
    assert {r["part"]: float(r["lost_gpu_hours"]) for r in files["downtime"]} == parts
    assert {k: float(row[f"failure_downtime_{k}_gpu_hours"]) for k in parts} == parts
    assert {k: float(row[f"recovery_minutes_{k}"]) for k in ("p50", "p90", "max")} == api[
        "recovery_minutes"
    ]
    assert [int(j["job_id"]) for j in files["jobs"]] == [j["id"] for j in api["jobs"]]
    assert [int(i["incident_id"]) for i in files["incidents"]] == [
        i["id"] for i in api["incidents"]
    ]
    pdf = client.get(f"/reports/weekly.pdf?week={last_week}")
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    assert pdf.content.startswith(b"%PDF-") and len(pdf.content) > 2000
    assert client.get("/reports/weekly.xlsx").status_code == 404
    page = client.get(f"/reports/weekly/?week={last_week}").content.decode()
    for fmt in ("csv", "zip", "pdf"):
        assert f'href="/reports/weekly.{fmt}?cluster=kuae-sim&week={last_week}" download' in page


def test_the_page_shows_where_the_failure_downtime_went(client, users, sim, last_week):
    """One bar per part, each with its GPU-hours and share of the downtime (they add up to
    the failure downtime), then the recovery minutes (docs/formulas.md, Where the downtime
    went)."""
    client.force_login(users["mia"])
    api = client.get(f"/api/v1/reports/weekly/?week={last_week}").json()
    html = client.get(f"/reports/weekly/?week={last_week}").content.decode()
    section = html[html.index('id="dt-h"') : html.index('id="ph-h"')]
    shown = re.findall(
        r'<tr role="row" data-part="(\w+)">.*?class="bar downpart-\1" style="width: (\d+)%".*?'
        r'data-gpu-hours="([^"]+)">([\d.,]+) GPU·h.*?data-share="([^"]+)"',
        section,
        re.S,
    )
    assert [p for p, *_ in shown] == ["detect", "localise", "mitigate", "restart"]
    downtime = api["lost_gpu_hours"]["downtime"]
    assert downtime > 0, "the simulated week should have failure downtime"
    assert sum(float(h) for _, _, h, _, _ in shown) == pytest.approx(downtime, rel=1e-12)
    assert sum(float(s) for *_, s in shown) == pytest.approx(1.0)
    for part, width, exact, text, _ in shown:
        assert float(exact) == api["downtime_breakdown_gpu_hours"][part]
        assert text == f"{float(exact):,.1f}" and int(width) == round(100 * float(exact) / downtime)
    recovery = api["recovery_minutes"]
    assert recovery["p50"] <= recovery["p90"] <= recovery["max"]
    assert f'<dd data-recovery="p90">{recovery["p90"]:.1f} min</dd>' in section


def test_jobs_show_the_gpu_hours_they_are_ranked_by(client, users, sim, last_week):
    """Page, CSV and PDF rank the jobs by lost GPU-hours and show that column (and the
    scheduled GPU-hours), with wall-clock hours labelled as such."""
    client.force_login(users["mia"])
    jobs = client.get(f"/api/v1/reports/weekly/?week={last_week}").json()["jobs"]
    lost = [sum(j["lost_gpu_hours"].values()) for j in jobs]
    assert len(jobs) > 3 and lost == sorted(lost, reverse=True)
    archive = client.get(f"/reports/weekly.zip?week={last_week}").content
    rows = tables(archive)["jobs"]
    assert len(rows) == len(jobs)
    for row, job, gpu_h in zip(rows, jobs, lost, strict=True):
        assert float(row["lost_gpu_hours"]) == pytest.approx(gpu_h)
        assert float(row["scheduled_gpu_hours"]) == pytest.approx(
            job["gpu_count"] * job["wall_hours"]
        )
        assert float(row["wall_clock_hours"]) == job["wall_hours"]
    html = client.get(f"/reports/weekly/?week={last_week}").content.decode()
    assert (
        '<th scope="col" class="r" aria-sort="descending">Lost <span class="muted">GPU·h</span>'
        in html
    )
    row = html[html.index(">" + jobs[0]["name"] + "</a>") :]
    cells = re.findall(r'<td class="r">([^<]*)</td>', row)[:4]  # the costliest job's first
    assert cells == [
        f"{jobs[0]['gpu_count']:,}",
        f"{lost[0]:,.1f}",
        f"{jobs[0]['gpu_count'] * jobs[0]['wall_hours']:,.0f}",
        f"{jobs[0]['wall_hours']:.1f}",
    ]
    assert "Wall-clock" in html
    text = runs(content(client.get(f"/reports/weekly.pdf?week={last_week}").content))
    jobs_at = text.index("Jobs (costliest first: by lost GPU-hours)")
    assert text[jobs_at + 1 : jobs_at + 9] == [
        "Job",
        "Name",
        "GPUs",
        "Lost GPU-h",
        "Scheduled GPU-h",
        "Wall-clock h",
        "Effective",
        "MFU",
    ]
    assert text[jobs_at + 9 : jobs_at + 15] == [
        str(jobs[0]["id"]),
        jobs[0]["name"],
        str(jobs[0]["gpu_count"]),
        f"{lost[0]:,.1f}",
        f"{jobs[0]['gpu_count'] * jobs[0]['wall_hours']:,.0f}",
        f"{jobs[0]['wall_hours']:,.1f}",
    ]


def test_trends_page_and_chart_endpoints(client, users, sim):
    client.force_login(users["otto"])
    html = client.get("/reports/trends/").content.decode()
    assert all(f"/charts/reports/{name}.json" in html for name in CHARTS)
    for name in CHARTS:
        fig = client.get(f"/charts/reports/{name}.json?days=30").json()
        assert fig["data"], name
        for trace in fig["data"]:
            points = len(trace.get("x") or []) * (len(trace["z"]) if "z" in trace else 1)
            assert 0 < points <= 2000, (name, trace.get("name"), points)
    mfu = client.get("/charts/reports/mfu.json").json()
    cluster = [v for v in mfu["data"][0]["y"] if v is not None]
    assert cluster and all(0.2 < v < 0.6 for v in cluster)  # the simulator's MFU range
    avail = client.get("/charts/reports/availability.json").json()["data"][0]["y"]
    assert min(v for v in avail if v is not None) < 1.0  # simulated drains show up


def test_report_pages_need_a_reader(client, users, sim):
    assert client.get("/reports/weekly/").status_code == 302  # to the login page
    client.force_login(users["ada"])  # agents read nothing
    assert client.get("/reports/weekly/").status_code == 403
    assert client.get("/reports/weekly.csv").status_code == 403
    assert client.get("/charts/reports/mfu.json").status_code == 403


def test_overview_shows_this_weeks_effective_rate_and_cluster_mtbf(client, users, sim):
    client.force_login(users["mia"])
    html = client.get("/").content.decode()
    week = client.get(f"/api/v1/reports/weekly/?week={this_week()}").json()
    assert (
        not week["complete"]
        and "this week so far" in html
        and f"{100 * week['effective_rate']:.2f}%" in html
    )
    rel = client.get("/api/v1/reports/reliability/").json()
    assert f"{rel['mtbf_hours']:.1f} h" in html and "Cluster MTBF" in html


def test_job_page_effective_panel(client, users, sim):
    from apps.jobs.models import Job

    client.force_login(users["mia"])
    flagship = Job.objects.get(external_id="sim-0")
    assert (
        f"/charts/jobs/{flagship.pk}/effective/"
        in client.get(f"/jobs/{flagship.pk}/").content.decode()
    )
    html = client.get(f"/charts/jobs/{flagship.pk}/effective/").content.decode()
    week = client.get(f"/api/v1/reports/weekly/?week={this_week()}").json()
    row = next(j for j in week["jobs"] if j["id"] == flagship.pk)
    assert f"{100 * row['effective_rate']:.2f}%" in html  # this week agrees with the report
    assert "Whole run" in html and "Checkpoint every" in html


def test_overview_reads_the_snapshot_beat_refreshes(client, users, sim):
    from apps.reports.models import Snapshot
    from apps.reports.tasks import refresh_snapshots
    from kuaeweb.schedule import beat_schedule

    assert beat_schedule()["refresh-snapshots"]["schedule"] == 60.0
    refresh_snapshots()
    row = Snapshot.objects.get()
    client.force_login(users["mia"])
    week = client.get(f"/api/v1/reports/weekly/?week={this_week()}").json()
    assert row.data["effective_rate"] == pytest.approx(week["effective_rate"], abs=1e-6)
    Snapshot.objects.filter(pk=row.pk).update(data={**row.data, "effective_rate": 0.5})
    assert "50.00%" in client.get("/").content.decode()  # read, not recomputed
    Snapshot.objects.filter(pk=row.pk).update(computed_at=row.computed_at - dt.timedelta(hours=1))
    assert "50.00%" not in client.get("/").content.decode()  # too old: recomputed


def test_the_overview_read_never_writes_the_snapshot(client, users, sim):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from apps.reports.models import Snapshot
    from apps.reports.tasks import refresh_snapshots

    client.force_login(users["mia"])
    with CaptureQueriesContext(connection) as queries:
        missing = client.get("/").content.decode()  # no snapshot yet: computed, not stored
        client.get("/?panel=1")
    assert not Snapshot.objects.exists()
    writes = [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
        and "django_session" not in q["sql"]  # signing in may refresh the session; not a read
    ]
    assert not writes, writes
    refresh_snapshots()  # the beat task is the one writer
    row = Snapshot.objects.get()
    assert f"{100 * row.data['effective_rate']:.2f}%" in missing  # the same figure either way
    stale = row.computed_at - dt.timedelta(hours=1)
    Snapshot.objects.filter(pk=row.pk).update(computed_at=stale)
    client.get("/")  # too old: recomputed for the answer, the row left to beat
    assert Snapshot.objects.get().computed_at == stale
