"""An incident naming a job names that job's nodes (issue 32.3): another job's nodes are
refused with a 400 naming `nodes` and the job they run, in the API and the form; the
timeline's Opened entry is at filing time, not the failure's (docs/incidents.md, Filing)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster, Node
from apps.incidents.models import Incident, TimelineEntry
from apps.jobs.models import Job
from apps.jobs.services import job_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def job_b(cluster: Cluster, nodes: list[Node]) -> Job:
    """A second running job, on gpu004..gpu007."""
    created, _ = job_create(
        cluster=cluster,
        nodes=nodes[4:],
        name="bert-large",
        n_params=3e8,
        gpu_count=32,
        status="running",
        started_at=timezone.now() - dt.timedelta(days=1),
    )
    return created


def _body(job: Job, nodes: list[str]) -> dict[str, object]:
    ago = timezone.now() - dt.timedelta(hours=3)
    return {
        "cluster": "c1",
        "title": "NCCL timeout",
        "category": "network_switch_cable",
        "severity": "sev2",
        "occurred_at": ago.isoformat(),
        "detected_at": ago.isoformat(),
        "job": job.pk,
        "nodes": nodes,
        "interrupts_job": True,
        "planned": False,
    }


def test_api_refuses_another_jobs_nodes(api, job: Job, job_b: Job) -> None:  # noqa: ANN001
    r = api("erin").post(
        "/api/v1/incidents/", _body(job, ["gpu000", "gpu004", "gpu005"]), format="json"
    )
    assert r.status_code == 400, r.content
    said = r.json()["nodes"][0]
    assert "gpu004 runs bert-large" in said and "gpu005 runs bert-large" in said
    assert "llama-70b" in said and "gpu000" not in said
    assert not Incident.objects.exists()


def test_api_accepts_the_jobs_own_nodes_and_opens_at_filing_time(api, job: Job, job_b: Job) -> None:  # noqa: ANN001
    before = timezone.now()
    r = api("erin").post("/api/v1/incidents/", _body(job, ["gpu000", "gpu001"]), format="json")
    assert r.status_code == 201, r.content
    incident = Incident.objects.get()
    opened = TimelineEntry.objects.get(incident=incident, kind="opened")
    assert opened.at >= before  # filed now; the failure three hours ago stays occurred_at
    assert incident.occurred_at < before - dt.timedelta(hours=2)


def test_api_patch_refuses_moving_onto_another_jobs_nodes(api, job: Job, job_b: Job) -> None:  # noqa: ANN001
    pk = api("erin").post("/api/v1/incidents/", _body(job, ["gpu000"]), format="json").json()["id"]
    r = api("erin").patch(f"/api/v1/incidents/{pk}/", {"nodes": ["gpu006"]}, format="json")
    assert r.status_code == 400 and "gpu006 runs bert-large" in r.json()["nodes"][0]


def test_form_refuses_another_jobs_nodes(client, users, job: Job, job_b: Job) -> None:  # noqa: ANN001
    client.force_login(users["erin"])
    form = {
        "cluster": "c1",
        "occurred_at": "2026-11-23 07:58:00",
        "title": "NCCL timeout",
        "category": "network_switch_cable",
        "severity": "sev2",
        "job": "llama-70b",
        "nodes": "gpu[003-004]",
        "interrupts_job": "on",
    }
    r = client.post("/incidents/new/", form)
    assert r.status_code == 400
    assert "gpu004 runs bert-large" in r.content.decode(), r.content.decode()[-3000:]
    assert not Incident.objects.exists()
    r = client.post("/incidents/new/", {**form, "nodes": "gpu[002-003]"})
    assert r.status_code == 302 and Incident.objects.count() == 1
