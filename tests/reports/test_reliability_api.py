"""`GET reports/reliability/` over stored incidents."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.incidents.services import incident_open

pytestmark = pytest.mark.django_db


def test_reliability_endpoint(api, cluster, nodes, job):
    end = timezone.now().replace(microsecond=0)
    start = end - dt.timedelta(days=7)
    for hours, planned in ((10, False), (40, False), (60, True)):
        at = start + dt.timedelta(hours=hours)
        incident_open(
            cluster=cluster,
            title="x",
            category="gpu" if not planned else "host_maintenance",
            severity="sev2",
            occurred_at=at,
            detected_at=at + dt.timedelta(minutes=2),
            recovered_at=at + dt.timedelta(minutes=32),
            job=job,
            nodes=[nodes[0]],
            interrupts_job=True,
            planned=planned,
        )
    iso = lambda t: t.isoformat().replace("+00:00", "Z")  # noqa: E731
    body = (
        api("mia")
        .get(
            f"/api/v1/reports/reliability/?cluster=c1&start={iso(start)}&end={iso(end)}&job_nodes=4"
        )
        .json()
    )
    assert body["interruptions"] == 2 and body["planned_interruptions"] == 1
    assert body["mtbf_hours"] == pytest.approx(7 * 24 / 2) and body["mtbf_level"] == "cluster"
    assert body["mttr_minutes"] == pytest.approx(32) and body["mttd_minutes"] == pytest.approx(2)
    assert body["node_days"] == pytest.approx(8 * 7)
    assert body["node_mtbf_hours"] == pytest.approx(8 * 7 * 24 / 2)
    assert body["projected_job_mttf_hours"] == pytest.approx(8 * 7 * 24 / 2 / 4)
    assert body["by_category"] == [{"category": "gpu", "count": 2, "share": 1.0}]


@pytest.mark.parametrize(
    "query,field",
    [
        ("cluster=nope", "cluster"),
        ("start=yesterday", "start"),
        ("job_nodes=0", "job_nodes"),
        ("start=2026-11-20T00:00:00Z&end=2026-11-10T00:00:00Z", "end"),
    ],
)
def test_bad_reliability_queries(api, cluster, query, field):
    response = api("mia").get(f"/api/v1/reports/reliability/?{query}")
    assert response.status_code == 400 and field in response.json()


def test_reliability_roles(api, cluster):
    assert api("ada").get("/api/v1/reports/reliability/").status_code == 403
    assert api(None).get("/api/v1/reports/reliability/").status_code == 401


def test_node_mtbf_shortcut_agrees_with_the_report(cluster, nodes, job):
    """The chart's two-query node MTBF is the report's node_mtbf_hours."""
    from apps.reports.selectors import node_mtbf_hours, reliability_report

    now = timezone.now()
    for hours, named in ((5, True), (30, True), (50, False)):
        at = now - dt.timedelta(hours=hours)
        incident_open(
            cluster=cluster,
            title="x",
            category="gpu",
            severity="sev3",
            occurred_at=at,
            detected_at=at,
            job=job,
            nodes=[nodes[1]] if named else [],
            interrupts_job=True,
        )
    start = now - dt.timedelta(days=3)
    report = reliability_report(cluster=cluster, start=start, end=now, now=now, job_nodes=1)
    assert report["node_failures"] == 2
    assert node_mtbf_hours(cluster=cluster, start=start, now=now) == pytest.approx(
        report["node_mtbf_hours"]
    )
