"""docs/incidents.md, A job's condition: a job that reports progress
after an interrupting incident's failure time — a step higher than any before it — is not
interrupted. It is `degraded`, its MFU counts (its own and the cluster's), the incident's
page says it kept running, and the interruption's downtime ends at that progress, so the
weekly report books no planned downtime for training that happened. Both for a maintenance
window's planned interruption and for a manual incident ticked "Interrupts the job"."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.incidents.models import Incident
from apps.incidents.services import incident_open
from apps.jobs.intake import MetricSample
from apps.jobs.models import Job
from apps.jobs.services import job_metrics_ingest
from apps.reports.selectors import overview
from apps.reports.weekly import weekly_report
from tests.maintenance.conftest import book

pytestmark = pytest.mark.django_db

M = dt.timedelta(minutes=1)


def step(job: Job, at: dt.datetime, n: int) -> None:
    job_metrics_ingest(
        job=job,
        samples=[
            MetricSample(
                ts=at,
                step=n,
                step_time_s=2.0,
                tokens_per_s=2.0e5,
                loss=2.1,
                grad_norm=1.0,
                node=None,
                compute_s=None,
            )
        ],
    )


def week_start(t: dt.datetime) -> dt.datetime:
    day = t.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day - dt.timedelta(days=day.weekday())


def condition(api, job: Job) -> dict:  # noqa: ANN001
    return api("otto").get(f"/api/v1/jobs/{job.pk}/").json()


def test_a_job_that_steps_on_through_a_maintenance_window_is_not_interrupted(
    api, client, users, cluster, job
):
    now = timezone.now()
    start = now - 4 * M
    if start < week_start(now) + 10 * M:
        pytest.skip("too close to the start of the week for a window 4 minutes back")
    step(job, now - 10 * M, 58_600)
    window = book(cluster, "gpu000", start=start, minutes=120)
    incident = Incident.objects.get(job=job)
    assert incident.planned and incident.interrupts_job and incident.recovered_at is None
    before = condition(api, job)
    assert before["condition"] == "interrupted" and before["mfu_now"] == 0

    step(job, now - 3 * M, 58_636)  # the job went on: 58,600 → 58,636 after the window began

    incident.refresh_from_db()
    assert incident.recovered_at == now - 3 * M  # its downtime ends at that progress
    assert incident.kept_running == (58_636, now - 3 * M)
    body = condition(api, job)
    assert body["condition"] == "degraded"  # the incident is still open, naming its node
    assert body["mfu_now"] and body["mfu_now"] > 0
    ov = overview(cluster=cluster, now=timezone.now())
    assert ov.mfu_now and ov.mfu_now > 0  # the cluster's MFU does not fall
    # The week books the minute before the step as planned, not the window's two hours.
    week = weekly_report(cluster=cluster, start=week_start(now), now=timezone.now())
    assert week["lost_gpu_hours"]["planned"] == pytest.approx(32 * 1 / 60, rel=1e-6)
    client.force_login(users["mia"])
    page = client.get(f"/incidents/{incident.pk}/").content.decode()
    said = " ".join(page[page.index('id="kept-running"') :].split("</dd>")[0].split())
    assert "kept running: it reported step 58,636" in said and "not interrupted" in said
    assert "(interrupted)" not in page
    assert "The job kept running" in incident.timeline.latest("id").text
    job_page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Interrupted" not in job_page and "its MFU now is 0%" not in job_page
    assert window.pk  # the window itself still holds its nodes
    assert not Incident.objects.filter(job=job, recovered_at__isnull=True).exists()


def test_a_job_that_stops_stepping_stays_interrupted(api, cluster, job):
    now = timezone.now()
    step(job, now - 10 * M, 58_600)
    book(cluster, "gpu000", start=now - 4 * M, minutes=120)
    step(job, now - 3 * M, 58_600)  # the same step again (a restart re-reporting): no progress
    incident = Incident.objects.get(job=job)
    assert incident.recovered_at is None and incident.kept_running is None
    body = condition(api, job)
    assert body["condition"] == "interrupted" and body["mfu_now"] == 0


def test_a_manual_incident_that_interrupts_a_job_that_went_on_is_recovered_at_its_progress(
    api, cluster, job
):
    now = timezone.now()
    step(job, now - 20 * M, 100)
    step(job, now - 5 * M, 136)  # after the failure the operator names below
    incident = incident_open(
        cluster=cluster,
        title="IB flap",
        category="nic",
        severity="sev3",
        occurred_at=now - 10 * M,
        detected_at=now - 10 * M,
        job=job,
        interrupts_job=True,
        actor="otto",
    )
    assert incident.recovered_at == now - 5 * M and incident.kept_running == (136, now - 5 * M)
    assert incident.downtime_s == pytest.approx(300)
    body = condition(api, job)
    assert body["condition"] == "ok" or body["condition"] == "degraded"
    assert body["mfu_now"] and body["mfu_now"] > 0


def test_a_manual_incident_through_the_page_with_progress_after_it(client, users, cluster, job):
    now = timezone.now()
    step(job, now - 20 * M, 100)
    client.force_login(users["erin"])
    r = client.post(
        "/incidents/new/",
        {
            "cluster": cluster.name,
            "title": "NCCL timeout",
            "category": "nccl_timeout",
            "severity": "sev3",
            "job": str(job.pk),
            "interrupts_job": "on",
            "description": "",
        },
    )
    assert r.status_code == 302, r.content.decode()[:2000]
    incident = Incident.objects.get(job=job)
    assert incident.recovered_at is None
    step(job, timezone.now() + dt.timedelta(seconds=1), 101)  # within the grace: not yet
    incident.refresh_from_db()
    assert incident.recovered_at is None
    step(job, timezone.now() + dt.timedelta(seconds=12), 102)
    incident.refresh_from_db()
    assert incident.recovered_at is not None and incident.kept_running is not None


def test_the_step_a_job_is_stuck_at_is_not_progress_past_its_hang(cluster, job):
    """A hang's failure time is its ranks' "last step" time, a moment before the Reporter
    stamps that step's sample (another clock): that sample is not progress (a real gloo job
    had its hang 'kept running' on its own stuck step, 95 µs after f(i))."""
    now = timezone.now()
    step(job, now - 20 * M, 100)
    stuck = now - 10 * M
    step(job, stuck + dt.timedelta(microseconds=95), 101)  # the stuck step's own sample
    incident = incident_open(
        cluster=cluster,
        title="Job hang",
        category="hang",
        severity="sev1",
        occurred_at=stuck,
        detected_at=now,
        job=job,
        interrupts_job=True,
        actor="check:job_hang",
    )
    incident.refresh_from_db()
    assert incident.recovered_at is None and incident.kept_running is None
    step(job, now + dt.timedelta(seconds=1), 102)  # it steps again: it went on
    incident.refresh_from_db()
    assert incident.kept_running is not None and incident.kept_running[0] == 102
