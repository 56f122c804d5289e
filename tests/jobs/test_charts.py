"""The job page's progress chart, served by the jobs app: interruptions and the cluster's
MFU target reach it through readers the incidents and reports apps lend at start-up."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.common.choices import Tone
from apps.jobs.services import job_create

pytestmark = pytest.mark.django_db


def test_progress_chart_shades_interruptions_and_draws_the_target(
    client, users, api, cluster, nodes
):
    now = timezone.now().replace(microsecond=0)
    job, _ = job_create(
        cluster=cluster,
        nodes=nodes[:2],
        name="run",
        n_params=7e9,
        gpu_count=16,
        status="running",
        started_at=now - dt.timedelta(hours=6),
    )
    occurred, recovered = now - dt.timedelta(hours=3), now - dt.timedelta(hours=2)
    created = api("erin").post(
        "/api/v1/incidents/",
        {
            "cluster": "c1",
            "severity": "sev2",
            "category": "gpu",
            "title": "XID 79",
            "job": job.pk,
            "interrupts_job": True,
            "planned": False,
            "occurred_at": occurred.isoformat(),
            "detected_at": (occurred + dt.timedelta(minutes=1)).isoformat(),
            "recovered_at": recovered.isoformat(),
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    client.force_login(users["mia"])
    fig = client.get(f"/charts/jobs/{job.pk}/progress.json").json()
    shapes = fig["layout"]["shapes"]
    labels = {s["label"]["text"]: s["y0"] for s in shapes if "label" in s}
    assert labels == {"target ≥ 50%": 0.5, "best public figure 60%": 0.6}
    [shade] = [s for s in shapes if s["type"] == "rect"]
    assert shade["fillcolor"] == Tone.BAD.colour
    assert (shade["x0"], shade["x1"]) == (
        occurred.strftime("%Y-%m-%dT%H:%M:%SZ"),
        recovered.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    assert client.get("/charts/jobs/999999/progress.json").status_code == 404
    assert client.get("/charts/nodes/nope/telemetry.json").status_code == 404
