"""`GET reports/weekly/` and `GET reports/availability/` over a hand-built week stored through
the real services: the same figures as the pure tests, to the fourth digit and beyond."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.fleet.services import NodeSpec, node_set_state, nodes_register
from apps.incidents.services import incident_open
from apps.jobs.models import Job
from apps.jobs.services import checkpoint_record, job_create

pytestmark = pytest.mark.django_db
UTC = dt.UTC


def t(day: int, hour: int = 0, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, day, hour, minute, tzinfo=UTC)


def _job(cluster, name: str, gpus: int, start: dt.datetime, end=None) -> Job:  # noqa: ANN001
    job, _ = job_create(
        cluster=cluster,
        name=name,
        gpu_count=gpus,
        n_params=70e9,
        status="completed" if end else "running",
        started_at=start,
        ended_at=end,
    )
    return job


def _fail(cluster, job, at, recovered, *, planned=False, category="gpu"):  # noqa: ANN001, ANN202
    return incident_open(
        cluster=cluster,
        title=f"{job.name} stop",
        category=category,
        severity="sev2",
        occurred_at=at,
        detected_at=at,
        recovered_at=recovered,
        job=job,
        interrupts_job=True,
        planned=planned,
        source="simulator",  # no paging for history
    )


@pytest.fixture
def week(cluster):  # noqa: ANN001, ANN201
    """The four jobs of tests/reports/test_effective.py, and three nodes' state history."""
    a = _job(cluster, "a", 8, t(18))
    checkpoint_record(job=a, step=1, saved_at=t(19), blocking_s=60)
    b = _job(cluster, "b", 16, t(10), t(20, 12))
    checkpoint_record(job=b, step=1, saved_at=t(15, 23), blocking_s=600)
    checkpoint_record(job=b, step=2, saved_at=t(16, 0, 55), blocking_s=600)
    _fail(cluster, b, t(16, 1), t(16, 3))
    c = _job(cluster, "c", 4, t(1))
    checkpoint_record(job=c, step=1, saved_at=t(22, 21), blocking_s=120)
    _fail(cluster, c, t(22, 22), t(23, 2), category="nic")
    d = _job(cluster, "d", 8, t(1))
    checkpoint_record(job=d, step=1, saved_at=t(17, 10, 30), blocking_s=60)
    _fail(cluster, d, t(17, 10), t(17, 12), planned=True, category="host_maintenance")
    _fail(cluster, d, t(17, 11), t(17, 13))
    n1, n2, n3 = nodes_register(
        cluster=cluster,
        specs=[
            NodeSpec(hostname="n1", rack="r", in_service_at=t(10)),
            NodeSpec(hostname="n2", rack="r", in_service_at=t(19)),
            NodeSpec(hostname="n3", rack="r", in_service_at=t(1)),
        ],
    )
    node_set_state(node=n1, state="drained", reason="x", at=t(17, 6))
    node_set_state(node=n1, state="healthy", reason="x", at=t(17, 18))
    node_set_state(node=n2, state="suspect", reason="x", at=t(20))
    node_set_state(node=n2, state="maintenance", reason="x", at=t(22, 12))
    node_set_state(node=n3, state="down", reason="x", at=t(14))
    node_set_state(node=n3, state="healthy", reason="x", at=t(16, 6))
    return {"a": a, "b": b, "c": c, "d": d}


def test_weekly_report_of_a_hand_built_week(api, week):
    body = api("mia").get("/api/v1/reports/weekly/?cluster=c1&week=2026-W47").json()
    assert body["week"] == "2026-W47" and body["start"].startswith("2026-11-16T00:00:00")
    assert body["scheduled_gpu_hours"] == pytest.approx(4704)
    assert body["effective_rate"] == pytest.approx(1 - (84 + 2 / 15) / 4704, abs=1e-9)
    assert body["lost_gpu_hours"] == pytest.approx(
        {"downtime": 56, "planned": 8, "rework": 20, "checkpoint": 8 / 60}
    )
    assert body["interruptions"] == 3 and body["planned_interruptions"] == 1
    assert body["mtbf_hours"] == pytest.approx(168 / 3) and body["mtbf_level"] == "cluster"
    assert body["availability"] == pytest.approx(402 / 432)
    assert body["mean_mfu"] is None  # no step samples this week
    rows = {j["name"]: j for j in body["jobs"]}
    assert rows["b"]["wall_hours"] == pytest.approx(108) and rows["b"]["lost_hours"] == 3
    assert rows["d"]["effective_rate"] == pytest.approx(1 - 3 / 168)
    assert {i["category"]: i["lost_gpu_hours"] for i in body["lost_by_category"]} == pytest.approx(
        {"gpu": 48 + 16, "nic": 12, "host_maintenance": 8}
    )
    assert body["incidents"][0]["week_lost_gpu_hours"] == pytest.approx(48)


def test_weekly_mean_mfu_from_step_samples(api, cluster):
    job = _job(cluster, "m", 8, t(16))
    peak = cluster.peak_tflops_per_gpu * 1e12 * 8
    samples = [  # MFU 0.30 for 2 s steps, 0.60 for a 1 s step → weighted mean 0.40
        {
            "ts": f"2026-11-17T08:0{i}:00Z",
            "step": i,
            "step_time_s": st,
            "tokens_per_s": m * peak / 420e9,
        }
        for i, (m, st) in enumerate([(0.30, 2.0), (0.60, 1.0), (0.30, 2.0), (0.60, 1.0)])
    ]
    assert (
        api("ada")
        .post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": samples}, format="json")
        .status_code
        == 202
    )
    body = api("mia").get("/api/v1/reports/weekly/?cluster=c1&week=2026-W47").json()
    assert body["mean_mfu"] == pytest.approx(0.40)
    assert body["jobs"][0]["mean_mfu"] == pytest.approx(0.40)


def test_availability_endpoint(api, week):
    body = (
        api("mia")
        .get(
            "/api/v1/reports/availability/?cluster=c1&start=2026-11-16T00:00:00Z&end=2026-11-23T00:00:00Z"
        )
        .json()
    )
    # the fixture's `cluster` has no other nodes, so only n1, n2, n3 count
    assert body["availability"] == pytest.approx(402 / 432)
    assert [n["hostname"] for n in body["by_node"]] == ["n1", "n2", "n3"]
    assert body["by_node"][1]["unavailable_hours"] == pytest.approx(12)


@pytest.mark.parametrize(
    "query,field",
    [
        ("week=2026-47", "week"),
        ("week=2026-W54", "week"),
        ("week=2999-W01", "week"),
        ("cluster=nope", "cluster"),
        # issue 41: weeks outside what the report's dates hold, and their neighbours
        ("week=0001-W01", "week"),
        ("week=1969-W52", "week"),
        ("week=9999-W52", "week"),
        ("week=9999-W53", "week"),
        ("week=2026-W00", "week"),
        ("week=0000-W01", "week"),
        ("week=-001-W01", "week"),
        ("week=%EF%BC%92026-W01", "week"),
    ],
)
def test_bad_weekly_queries(api, cluster, query, field):
    response = api("mia").get(f"/api/v1/reports/weekly/?{query}")
    assert response.status_code == 400 and field in response.json()


@pytest.mark.parametrize(
    "week",
    [
        "0001-W01",
        "0001-W02",
        "0002-W01",
        "1969-W52",
        "1999-W52",
        "9999-W52",
        "9999-W53",
        "2026-W00",
        "2026-W54",
        "garbage",
        "",
    ],
)
def test_a_week_the_dates_cannot_hold_is_a_message_on_the_page_and_a_400_elsewhere(
    client, users, cluster, week
):
    """issue 41: `/reports/weekly/?week=0001-W01` was a 500 (the previous week and the
    trends fall before year 1), its ZIP and PDF too, and the API answered a report of year 1.
    """
    client.force_login(users["mia"])
    page = client.get(f"/reports/weekly/?week={week}")
    assert page.status_code == 200
    html = page.content.decode()
    if week:
        assert 'id="bad-week"' in html and "Showing the last complete week" in html
    for fmt in ("csv", "zip", "pdf"):
        download = client.get(f"/reports/weekly.{fmt}?week={week}")
        assert download.status_code == (400 if week else 200), fmt
    answer = client.get(f"/api/v1/reports/weekly/?week={week}")
    assert answer.status_code == (400 if week else 200)
    if week:
        assert "week" in answer.json()


def test_the_first_week_a_report_holds(client, users, cluster):
    client.force_login(users["mia"])
    assert client.get("/api/v1/reports/weekly/?week=2000-W01").json()["week"] == "2000-W01"
    for fmt in ("csv", "zip", "pdf"):
        assert client.get(f"/reports/weekly.{fmt}?week=2000-W01").status_code == 200, fmt
    said = client.get("/reports/weekly/?week=1999-W52").content.decode()
    assert "reports begin with week 2000-W01" in said


def test_weekly_roles(api, cluster):
    assert api(None).get("/api/v1/reports/weekly/").status_code == 401
    assert api("ada").get("/api/v1/reports/weekly/").status_code == 403
    assert api("otto").get("/api/v1/reports/weekly/").status_code == 200


def _phases(api, job, *spans) -> None:  # noqa: ANN001
    """Post `spans` (name, start, end) for `job`, after the fact, as an operator."""
    body = {
        "phases": [{"name": n, "start": s.isoformat(), "end": e.isoformat()} for n, s, e in spans]
    }
    answer = api("otto").post(f"/api/v1/jobs/{job.pk}/phases/", body, format="json")
    assert answer.status_code == 202, answer.content


def test_weekly_phase_gpu_hours_of_a_hand_built_week(api, week, client, users):
    a, b, c, d = week["a"], week["b"], week["c"], week["d"]
    _phases(api, a, ("startup", t(18), t(18, 0, 10)))  # 10 min × 8 GPUs
    _phases(
        api,
        b,
        ("eval", t(15, 23), t(16, 1)),  # straddles the week's start: 1 h inside, × 16
        ("eval", t(17, 5), t(17, 5, 6)),  # 6 min × 16
    )
    _phases(api, c, ("checkpoint_restore", t(22, 23, 30), t(23, 0, 30)))  # 30 min inside, × 4
    _phases(api, d, ("eval", t(19, 12), t(19, 12, 45)), ("data_wait", t(9), t(9, 1)))  # last: W46
    expected = {
        "startup": 8 * 10 / 60,
        "eval": 16 * 1 + 16 * 6 / 60 + 8 * 45 / 60,
        "checkpoint_restore": 4 * 30 / 60,
    }
    body = api("mia").get("/api/v1/reports/weekly/?cluster=c1&week=2026-W47").json()
    assert body["phase_gpu_hours"] == pytest.approx(expected, abs=1e-9)
    largest_first = ["eval", "checkpoint_restore", "startup"]
    assert list(body["phase_gpu_hours"]) == largest_first
    # Not part of the effective rate: the same figure as without any phase.
    assert body["effective_rate"] == pytest.approx(1 - (84 + 2 / 15) / 4704, abs=1e-9)
    before = api("mia").get("/api/v1/reports/weekly/?cluster=c1&week=2026-W46").json()
    assert before["phase_gpu_hours"] == pytest.approx({"data_wait": 8.0, "eval": 16 * 1.0})

    client.force_login(users["mia"])
    html = client.get("/reports/weekly/?cluster=c1&week=2026-W47").content.decode()
    assert "Time in the run not spent training" in html
    shown = re.findall(
        r'<tr><th scope="row" class="mono">(\w+)</th><td class="r">([\d.,]+) GPU·h', html
    )
    assert shown == [("eval", "23.6"), ("checkpoint_restore", "2.0"), ("startup", "1.3")]


def test_the_weekly_page_reads_phases_in_the_same_queries(api, week, client, users):
    client.force_login(users["mia"])
    url = "/reports/weekly/?cluster=c1&week=2026-W47"
    client.get(url)  # warm the cached reads (pipeline banner)
    with CaptureQueriesContext(connection) as few:
        client.get(url)
    for job in week.values():
        _phases(api, job, *[("eval", t(17, h), t(17, h, 5)) for h in range(12)])
    with CaptureQueriesContext(connection) as many:
        html = client.get(url).content.decode()
    assert "No phases reported this week" not in html
    assert len(many.captured_queries) == len(few.captured_queries)
