"""Rows stored before the bounds on numbers (docs/api.md, Conventions):
a checkpoint that blocked for 1e308 s, a job with 1e300 FLOPs per token whose samples say
1e100 tokens/s, written through the ORM, never 500 a page or serialize as `Infinity`."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from apps.common.weeks import week_label, week_start
from apps.incidents.services import incident_open
from apps.jobs.intake import MetricSample
from apps.jobs.models import Checkpoint, Job
from apps.jobs.services import job_create, job_metrics_ingest

pytestmark = pytest.mark.django_db
CHARTS = ("mfu", "availability", "availability-heatmap", "effective", "checkpoints")


@pytest.fixture
def absurd(cluster, nodes):  # noqa: ANN001, ANN201
    """Last week: one job with a 1e308 s checkpoint and an incident, one with an infinite
    MFU."""
    monday = week_start(timezone.now()) - dt.timedelta(weeks=1)
    blocked, _ = job_create(
        cluster=cluster,
        nodes=nodes[:1],
        name="blocked",
        gpu_count=8,
        n_params=7e9,
        status="running",
        started_at=monday,
    )
    Checkpoint.objects.create(
        job=blocked, step=1, saved_at=monday + dt.timedelta(days=2), blocking_s=1e308
    )
    failed = monday + dt.timedelta(days=4)
    incident_open(  # its impact reads the checkpoint: saved_at + 1e308 s overflowed
        cluster=cluster,
        title="blocked stop",
        category="gpu",
        severity="sev2",
        occurred_at=failed,
        detected_at=failed,
        recovered_at=failed + dt.timedelta(hours=1),
        job=blocked,
        interrupts_job=True,
        source="simulator",
    )
    fast, _ = job_create(
        cluster=cluster,
        nodes=nodes[1:2],
        name="fast",
        gpu_count=8,
        status="running",
        started_at=monday,
    )
    Job.objects.filter(pk=fast.pk).update(flops_per_token=1e300)
    samples = [
        MetricSample(
            ts=monday + dt.timedelta(days=3, minutes=i),
            step=i,
            step_time_s=1.0,
            tokens_per_s=1e100,
            loss=None,
            grad_norm=None,
            node=None,
            compute_s=None,
        )
        for i in range(3)
    ]
    job_metrics_ingest(job=fast, samples=samples)
    return {"week": week_label(monday), "blocked": blocked, "fast": fast}


def _finite_json(response) -> dict:  # noqa: ANN001
    assert response.status_code == 200, response.content[:300]
    text = response.content.decode()
    assert "Infinity" not in text and "NaN" not in text
    return json.loads(text)


def test_the_weekly_api_and_page_survive_absurd_rows(api, client, users, absurd):
    week = absurd["week"]
    body = _finite_json(api("mia").get(f"/api/v1/reports/weekly/?cluster=c1&week={week}"))
    rows = {j["name"]: j for j in body["jobs"]}
    assert rows["fast"]["mean_mfu"] is None  # an infinite MFU is unknown
    client.force_login(users["mia"])
    assert client.get(f"/reports/weekly/?cluster=c1&week={week}").status_code == 200
    for fmt in ("csv", "zip", "pdf"):
        assert client.get(f"/reports/weekly.{fmt}?cluster=c1&week={week}").status_code == 200
    assert client.get("/reports/trends/?cluster=c1").status_code == 200
    for name in CHARTS:
        _finite_json(client.get(f"/charts/reports/{name}.json?cluster=c1&days=30"))
    for job in (absurd["blocked"], absurd["fast"]):
        assert client.get(f"/charts/jobs/{job.pk}/effective/").status_code == 200


def test_the_job_api_survives_absurd_rows(api, client, users, absurd):
    fast = absurd["fast"]
    reader = api("mia")
    listed = _finite_json(reader.get("/api/v1/jobs/?cluster=c1"))
    assert {j["name"]: j["mfu_now"] for j in listed["results"]}["fast"] is None
    assert _finite_json(reader.get(f"/api/v1/jobs/{fast.pk}/"))["mfu_now"] is None
    points = _finite_json(reader.get(f"/api/v1/jobs/{fast.pk}/metrics/"))["points"]
    assert points and all(p["mfu"] is None for p in points)
    client.force_login(users["mia"])
    for job in (absurd["blocked"], fast):
        assert client.get(f"/jobs/{job.pk}/").status_code == 200
        _finite_json(client.get(f"/charts/jobs/{job.pk}/progress.json"))
    assert client.get("/jobs/").status_code == 200
