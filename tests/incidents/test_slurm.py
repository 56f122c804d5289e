"""Slurm intake (CONTRACT §2): sacct --json records → jobs, nodes, NODE_FAIL incidents."""

from __future__ import annotations

import copy
import datetime as dt
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.common.errors import BatchError
from apps.fleet.models import Node
from apps.incidents.models import Incident
from apps.jobs.models import Job
from apps.jobs.slurm import parse_slurm
from tests.support import SHARED

DATA = SHARED / "slurm"


def record(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def with_job(base: dict, **changes) -> dict:
    out = copy.deepcopy(base)
    out["jobs"][0].update(changes)
    return out


def test_parse_the_real_records():
    (failed,) = parse_slurm(record("slurmdb-job-failed.json"))
    assert (failed.job_id, failed.status, failed.hostnames) == ("5739", "failed", ["cn1"])
    assert failed.started_at == dt.datetime.fromtimestamp(1762942460, tz=dt.UTC)
    (running,) = parse_slurm(record("slurmdb-job-gpus-running.json"))
    assert running.status == "running" and running.ended_at is None and running.gpus is None


def test_hostlists_states_and_gres():
    base = record("slurmdb-job-gpus-running.json")
    tres = {"allocated": [{"type": "gres", "name": "gpu:h100", "id": 1001, "count": 24}]}
    (job,) = parse_slurm(
        with_job(base, nodes="gpu[1-2,7]", tres=tres, state={"current": ["REQUEUED"]})
    )
    assert job.hostnames == ["gpu1", "gpu2", "gpu7"] and job.gpus == 24 and job.status == "pending"
    with pytest.raises(BatchError) as err:
        parse_slurm(
            {
                "jobs": [
                    base["jobs"][0],
                    {**base["jobs"][0], "state": {"current": ["WEIRD"]}},
                    {**base["jobs"][0], "nodes": "gpu[1-"},
                ]
            }
        )
    assert set(err.value.errors) == {"jobs[1].state.current", "jobs[2].nodes"}


@pytest.mark.django_db
def test_intake_creates_updates_and_registers_nodes(api, cluster):
    client = api("ada")
    response = client.post(
        "/api/v1/ingest/slurm/?cluster=c1", record("slurmdb-job-gpus-running.json"), format="json"
    )
    assert response.status_code == 200 and response.json() == {
        "created": 1,
        "updated": 0,
        "incidents": 0,
    }
    job = Job.objects.get(external_id="5557")
    assert job.cluster.name == "c1" and job.status == "running" and job.gpu_count == 8
    assert list(job.nodes.values_list("hostname", flat=True)) == ["gpu2"]
    assert Node.objects.get(hostname="gpu2").cluster == cluster
    # The same job ended: updated, not duplicated.
    done = with_job(
        record("slurmdb-job-gpus-running.json"),
        state={"current": ["COMPLETED"]},
        time={"start": 1762784646, "end": 1762790000},
    )
    assert (
        client.post("/api/v1/ingest/slurm/?cluster=c1", done, format="json").json()["updated"] == 1
    )
    job.refresh_from_db()
    assert job.status == "completed" and job.ended_at == dt.datetime.fromtimestamp(
        1762790000, tz=dt.UTC
    )
    assert Job.objects.count() == 1


@pytest.mark.django_db
def test_node_fail_opens_one_incident(api, cluster):
    body = with_job(
        record("slurmdb-job-gpus-running.json"),
        nodes="gpu[1-4]",
        failed_node="gpu3",
        state={"current": ["NODE_FAIL"]},
        restart_cnt=1,
        time={"start": 1762784646, "end": 1762788000},
    )
    client = api("ada")
    assert (
        client.post("/api/v1/ingest/slurm/?cluster=c1", body, format="json").json()["incidents"]
        == 1
    )
    assert (
        client.post("/api/v1/ingest/slurm/?cluster=c1", body, format="json").json()["incidents"]
        == 0
    )
    incident = Incident.objects.get()
    assert (
        incident.category == "node_unreachable" and incident.interrupts_job and not incident.planned
    )
    assert incident.job.external_id == "5557" and incident.job.restart_count == 1
    assert list(incident.nodes.values_list("hostname", flat=True)) == ["gpu3"]
    assert incident.occurred_at == dt.datetime.fromtimestamp(1762788000, tz=dt.UTC)


@pytest.mark.django_db
def test_bad_slurm_payloads_are_400(api, cluster):
    client = api("ada")
    assert client.post(
        "/api/v1/ingest/slurm/?cluster=nope", record("slurmdb-job-failed.json"), format="json"
    ).json() == {"cluster": ["unknown cluster 'nope'"]}
    # the record says cluster "hpc", which does not exist here
    assert (
        client.post(
            "/api/v1/ingest/slurm/", record("slurmdb-job-failed.json"), format="json"
        ).status_code
        == 400
    )
    assert (
        client.post("/api/v1/ingest/slurm/?cluster=c1", {"nope": 1}, format="json").status_code
        == 400
    )
    assert Job.objects.count() == 0
    assert (
        api("otto")
        .post("/api/v1/ingest/slurm/?cluster=c1", record("slurmdb-job-failed.json"), format="json")
        .status_code
        == 403
    )


@pytest.mark.django_db
def test_import_slurm_command(cluster):
    out = io.StringIO()
    call_command(
        "import_slurm", str(DATA / "slurmdb-job-failed.json"), "--cluster", "c1", stdout=out
    )
    assert "1 jobs created" in out.getvalue()
    assert Job.objects.get(external_id="5739").status == "failed"
    with pytest.raises(CommandError):
        call_command("import_slurm", "/nonexistent.json", "--cluster", "c1")
