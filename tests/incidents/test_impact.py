"""What an incident cost: pure cases, and stored on the incident for sorting."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.incidents.impact import impact
from apps.jobs.services import checkpoints_record_bulk

T0 = dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.UTC)
M = dt.timedelta(minutes=1)


def test_downtime_plus_rework_since_the_last_finished_checkpoint():
    cost = impact(
        failed_at=T0,
        recovered_at=T0 + 30 * M,
        now=T0 + 60 * M,
        planned=False,
        job_gpus=1024,
        job_started_at=T0 - 600 * M,
        checkpoints=[
            (T0 - 50 * M, 30),
            (T0 - 20 * M, 30),
            (T0 - 10 * M + dt.timedelta(seconds=1), 600),
        ],
    )
    # The last checkpoint had not finished by the failure: rework counts from T0 - 20 min.
    assert (cost.downtime_s, cost.rework_s) == (1800, 1200)
    assert cost.lost_gpu_hours == pytest.approx(1024 * 3000 / 3600)


def test_no_checkpoint_means_rework_since_the_start_and_planned_has_none():
    unexpected = impact(
        failed_at=T0,
        recovered_at=T0 + 10 * M,
        now=T0,
        planned=False,
        job_gpus=8,
        job_started_at=T0 - 120 * M,
    )
    assert unexpected.rework_s == 7200
    planned = impact(
        failed_at=T0,
        recovered_at=T0 + 10 * M,
        now=T0,
        planned=True,
        job_gpus=8,
        job_started_at=T0 - 120 * M,
    )
    assert planned.rework_s == 0 and planned.lost_gpu_hours == pytest.approx(8 * 600 / 3600)


def test_open_incident_runs_to_now_and_no_job_costs_no_gpu_hours():
    cost = impact(
        failed_at=T0,
        recovered_at=None,
        now=T0 + 5 * M,
        planned=False,
        job_gpus=None,
        job_started_at=None,
    )
    assert cost.downtime_s == 300 and cost.lost_gpu_hours == 0


@pytest.mark.django_db
def test_cost_is_stored_and_sortable(api, job):
    job.started_at = T0 - 600 * M
    job.save()
    checkpoints_record_bulk(job=job, items=[(100, T0 - 30 * M, 10.0, None)])
    body = {
        "title": "x",
        "cluster": "c1",
        "category": "gpu",
        "severity": "sev2",
        "job": job.pk,
        "occurred_at": T0.isoformat(),
        "detected_at": (T0 + M).isoformat(),
        "recovered_at": (T0 + 20 * M).isoformat(),
        "interrupts_job": True,
        "planned": False,
    }
    big = api("erin").post("/api/v1/incidents/", body, format="json").json()
    assert big["downtime_s"] == 1200 and big["rework_s"] == 1800
    assert big["lost_gpu_hours"] == pytest.approx(32 * 3000 / 3600)
    small = (
        api("erin")
        .post("/api/v1/incidents/", {**body, "interrupts_job": False}, format="json")
        .json()
    )
    assert small["lost_gpu_hours"] == 0
    order = [i["id"] for i in api("mia").get("/api/v1/incidents/?sort=-cost").json()["results"]]
    assert order == [big["id"], small["id"]]


def test_rework_leaves_out_time_the_job_was_already_down():
    # Last checkpoint 4 h before; the job was stopped for 3 h of those (a planned window).
    cost = impact(
        failed_at=T0,
        recovered_at=T0 + 10 * M,
        now=T0,
        planned=False,
        job_gpus=8,
        job_started_at=T0 - 1000 * M,
        checkpoints=[(T0 - 240 * M, 10)],
        earlier_downtimes=[(T0 - 200 * M, T0 - 20 * M)],
    )
    assert cost.rework_s == (240 - 180) * 60
