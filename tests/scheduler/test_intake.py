"""Slurm intake (docs/integrations.md, 4. Slurm): sacct/squeue/slurmrestd records of Slurm 22.05 and
25.x → jobs and their attempts, nodes, NODE_FAIL incidents. Its rules, each against real
Slurm output (tests/data/slurm)."""

from __future__ import annotations

import copy
import datetime as dt
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.fleet.models import Node
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.incidents.models import Incident
from apps.jobs.models import Job, JobAttempt
from apps.scheduler.services import slurm_ingest
from tests.bench.slurm import sacct_answer, squeue_answer
from tests.support import SHARED

DATA = SHARED / "slurm"
URL = "/api/v1/ingest/slurm/?cluster=c1"


def record(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def with_job(base: dict, **changes) -> dict:
    out = copy.deepcopy(base)
    out["jobs"][0].update(changes)
    return out


def at(seconds: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC)


def ingest(body: dict) -> dict[str, int]:
    return slurm_ingest(cluster_name="c1", payload=body)


@pytest.mark.django_db
def test_intake_creates_updates_and_registers_nodes(api, cluster):
    client = api("ada")
    response = client.post(URL, record("slurmdb-job-gpus-running.json"), format="json")
    assert response.status_code == 200 and response.json() == {
        "created": 1,
        "updated": 0,
        "incidents": 0,
        "folded": 0,
        "skipped": 0,
    }
    job = Job.objects.get(external_id="5557")
    assert job.cluster.name == "c1" and job.status == "running"
    assert job.submitted_at == at(1762784646)
    assert list(job.nodes.values_list("hostname", flat=True)) == ["gpu2"]
    assert Node.objects.get(hostname="gpu2").cluster == cluster
    # The same job ended: updated, not duplicated.
    done = with_job(
        record("slurmdb-job-gpus-running.json"),
        state={"current": ["COMPLETED"]},
        time={"submission": 1762784646, "start": 1762784646, "end": 1762790000},
    )
    assert client.post(URL, done, format="json").json()["updated"] == 1
    job.refresh_from_db()
    assert job.status == "completed" and job.ended_at == at(1762790000)
    assert Job.objects.count() == 1 and job.attempts.count() == 1


@pytest.mark.django_db
def test_node_fail_opens_one_incident(api, cluster):
    body = with_job(
        record("slurmdb-job-gpus-running.json"),
        nodes="gpu[1-4]",
        failed_node="gpu3",
        state={"current": ["NODE_FAIL"]},
        restart_cnt=1,
        time={"submission": 1762784646, "start": 1762784646, "end": 1762788000},
    )
    client = api("ada")
    assert client.post(URL, body, format="json").json()["incidents"] == 1
    assert client.post(URL, body, format="json").json()["incidents"] == 0
    incident = Incident.objects.get()
    assert (
        incident.category == "node_unreachable" and incident.interrupts_job and not incident.planned
    )
    assert incident.job.external_id == "5557" and incident.job.restart_count == 1
    assert list(incident.nodes.values_list("hostname", flat=True)) == ["gpu3"]
    assert incident.occurred_at == at(1762788000)


@pytest.mark.django_db
def test_rule1_each_node_fail_attempt_is_an_interruption(cluster):
    """22.05 accounting has no restart_cnt: both NODE_FAIL attempts of the requeued job
    are one job and, sent one request each, two interruptions (the code before kept one).
    Sent in one request they name the same node: one incident, the other attempt folded
    (docs/integrations.md, 4. Slurm)."""
    body = record("22.05/sacct-22.05-requeued-twice.json")
    first, second = ({"jobs": [job]} for job in body["jobs"])
    assert ingest(first) == {
        "created": 1,
        "updated": 0,
        "incidents": 1,
        "folded": 0,
        "skipped": 0,
    }
    assert ingest(second)["incidents"] == 1
    job = Job.objects.get()
    incidents = Incident.objects.order_by("occurred_at")
    assert [i.occurred_at for i in incidents] == [at(1796043925), at(1796044057)]
    assert all(i.job == job and i.interrupts_job for i in incidents)
    assert ingest(body)["incidents"] == 0  # the same answer again: nothing new
    assert list(job.attempts.values_list("key", "state")) == [
        (1796043921, "NODE_FAIL"),
        (1796043925, "NODE_FAIL"),
    ]
    assert job.restart_count == 1


@pytest.mark.django_db
def test_rule1_node_fail_attempts_of_one_request_on_one_node_are_one_incident(cluster):
    body = record("22.05/sacct-22.05-requeued-twice.json")
    assert ingest(body) == {
        "created": 1,
        "updated": 1,
        "incidents": 1,
        "folded": 1,
        "skipped": 0,
    }
    incident = Incident.objects.get()
    assert incident.occurred_at == at(1796043925) and incident.job == Job.objects.get()
    assert list(incident.nodes.values_list("hostname", flat=True)) == ["rcgpu02"]
    assert ingest(body)["incidents"] == 0


@pytest.mark.django_db
def test_rule2_an_attempt_that_never_started_erases_no_times(cluster):
    """Job 8 of the battery: two attempts ran, the third was cancelled while pending."""
    battery = record("22.05/sacct-22.05-battery.json")
    attempts = [j for j in battery["jobs"] if j["job_id"] == 8]
    ingest({"jobs": attempts[:2]})
    ingest({"jobs": attempts[2:]})  # the cancellation, read later on its own
    job = Job.objects.get(external_id="8")
    assert job.started_at == at(1796043921)  # the first attempt's start, kept
    assert job.ended_at == at(1796044070) and job.status == "cancelled"
    assert job.submitted_at == at(1796043921)
    assert [(a.started_at, a.ended_at) for a in job.attempts.all()] == [
        (at(1796043921), at(1796043925)),
        (at(1796044050), at(1796044057)),
        (None, at(1796044070)),
    ]
    assert list(job.nodes.values_list("hostname", flat=True)) == ["rcgpu02"]
    # An older answer read late (squeue had the second attempt running) changes nothing.
    ingest(with_job({"jobs": attempts[1:2]}, state={"current": "RUNNING", "reason": "None"}))
    job.refresh_from_db()
    assert job.status == "cancelled" and job.ended_at == at(1796044070)


@pytest.mark.django_db
def test_rule2_requeued_and_pending_again(cluster):
    """The newest attempt pending (requeued): the job is pending, started at its first
    attempt, not ended."""
    first, second = record("22.05/sacct-22.05-requeued-twice.json")["jobs"]
    pending = copy.deepcopy(second)
    pending["state"] = {"current": "PENDING", "reason": "BeginTime"}
    pending["nodes"] = "None assigned"
    ingest({"jobs": [first, pending]})
    job = Job.objects.get()
    assert (job.status, job.started_at, job.ended_at) == ("pending", at(1796043921), None)


@pytest.mark.django_db
def test_rule3_gpus_from_tres(cluster):
    body = record("22.05/sacct-22.05-cpu-only-and-gpus-flag.json")
    ingest(body)
    assert dict(Job.objects.values_list("name", "gpu_count")) == {"cpu-only": 0, "gpus-flag": 3}
    no_tres = copy.deepcopy(body)
    for job in no_tres["jobs"]:
        del job["tres"]
        job["job_id"] += 100
    ingest(no_tres)  # no TRES at all: nodes × gpus_per_node
    assert list(
        Job.objects.filter(external_id__in=["111", "112"]).values_list("gpu_count", flat=True)
    ) == [8, 8]
    ingest(record("22.05/squeue-22.05.json"))
    gpus = dict(
        Job.objects.filter(name__in=["two-node", "ok-train"]).values_list("name", "gpu_count")
    )
    assert gpus == {"two-node": 16, "ok-train": 4}


@pytest.mark.django_db
def test_rule4_a_reused_job_id_is_a_new_job(api, cluster):
    client = api("ada")
    body = record("22.05/slurmrestd-v0.0.38-slurm-jobs.json")
    assert client.post(URL, body, format="json").json()["created"] == 6
    # The controller restarted with fresh state: job ids start again at 1, days later.
    fresh = copy.deepcopy(body)
    for job in fresh["jobs"]:
        for name in ("submit_time", "start_time", "end_time"):
            job[name] += 86_400 * 3
        job["name"] = "after-restart-" + job["name"]
    assert client.post(URL, fresh, format="json").json() == {
        "created": 6,
        "updated": 0,
        "incidents": 0,
        "folded": 0,
        "skipped": 0,
    }
    old, new = Job.objects.filter(external_id="1").order_by("submitted_at")
    assert (old.name, old.submitted_at) == ("ok-train", at(1796043824))
    assert new.name == "after-restart-ok-train" and old.status == new.status == "completed"
    # A launcher's POST jobs/ with that id finds the newest.
    posted = api("otto").post(
        "/api/v1/jobs/",
        {"name": "x", "cluster": "c1", "external_id": "1", "gpu_count": 4, "nodes": []},
        format="json",
    )
    assert posted.status_code == 200 and posted.json()["id"] == new.pk
    listed = api("otto").get("/api/v1/jobs/?cluster=c1&external_id=1").json()
    assert [j["id"] for j in listed["results"]] == [new.pk, old.pk]
    assert listed["results"][0]["submitted_at"].startswith("2026-12-0")


@pytest.mark.django_db
def test_rule4_a_launcher_job_is_found_by_slurm(api, cluster):
    """The launcher registers its run (`POST jobs/`, Slurm's id, no submit time) before the
    sync reads Slurm: the sync updates that job, it does not make a second."""
    body = record("22.05/squeue-22.05.json")
    response = api("ada").post(
        "/api/v1/jobs/",
        {"name": "ok-train", "cluster": "c1", "external_id": "1", "gpu_count": 4, "nodes": []},
        format="json",
    )
    assert response.status_code == 201
    ingest(body)
    job = Job.objects.get(external_id="1")
    assert job.pk == response.json()["id"] and job.submitted_at == at(1796043824)
    assert job.status == "running"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name",
    [
        "22.05/squeue-22.05.json",
        "22.05/slurmrestd-v0.0.38-slurm-jobs.json",
        "22.05/slurmrestd-v0.0.38-slurmdb-jobs.json",
        "22.05/sacct-22.05-battery.json",
        "slurmdb-job-failed.json",
        "slurmdb-job-gpus-running.json",
    ],
)
def test_rule5_every_shape_is_accepted(api, cluster, name):
    body = record(name)
    response = api("ada").post(URL, body, format="json")
    assert response.status_code == 200, response.content
    counts = response.json()
    assert counts["created"] + counts["updated"] == len(body["jobs"])
    for job in Job.objects.all():
        if job.status == "running":
            assert job.ended_at is None and job.started_at is not None
        if job.status == "pending":
            assert job.started_at is None or job.attempts.filter(started_at__isnull=False)


@pytest.mark.django_db
def test_rule5_squeue_then_sacct_is_one_job(cluster):
    ingest(record("22.05/squeue-22.05.json"))
    ingest(record("22.05/slurmrestd-v0.0.38-slurmdb-jobs.json"))
    ingest(record("22.05/sacct-22.05-battery.json"))
    one = Job.objects.get(external_id="1")
    assert (one.status, one.started_at, one.ended_at) == (
        "completed",
        at(1796043825),
        at(1796043845),
    )
    assert Job.objects.filter(external_id__in=["1", "2", "3", "4", "5"]).count() == 5


@pytest.mark.django_db
def test_array_jobs_keep_their_ids(cluster):
    ingest(record("22.05/sacct-22.05-battery.json"))
    tasks = Job.objects.filter(array_job_id=9).order_by("array_task_id")
    assert list(tasks.values_list("external_id", "array_task_id")) == [("10", 0), ("9", 1)]
    assert Job.objects.get(external_id="1").array_job_id is None


@pytest.mark.django_db
def test_attempts_on_the_job_page(api, cluster, client, users):
    ingest(record("22.05/sacct-22.05-battery.json"))
    client.force_login(users["otto"])
    page = client.get(f"/jobs/{Job.objects.get(external_id='8').pk}/").content.decode()
    assert "Attempts" in page and page.count("NODE_FAIL") >= 2 and "CANCELLED" in page
    assert JobAttempt.objects.filter(job__external_id="8").count() == 3


@pytest.mark.django_db
def test_rule8_queries_do_not_grow_with_jobs(db):
    """The same number of queries for 20 jobs as for 200 (on 40 nodes, registered first),
    creating them from squeue and ending them from sacct."""
    counts = []
    for n, size in enumerate((20, 200)):
        name, prefix = f"q{n}", f"q{n}n"
        cluster = cluster_create(
            name=name, gpu_model="H100", peak_tflops_per_gpu=989, gpus_per_node=8
        )
        nodes_register(
            cluster=cluster, specs=[NodeSpec(hostname=f"{prefix}{i:04d}") for i in range(1, 41)]
        )
        runs = []
        for answer in (
            squeue_answer(size, pool=40, prefix=prefix),
            sacct_answer(size, pool=40, prefix=prefix),
        ):
            with CaptureQueriesContext(connection) as queries:
                result = slurm_ingest(cluster_name=name, payload=answer)
            assert result["created"] + result["updated"] == size
            runs.append(len(queries))
        counts.append(runs)
        assert Job.objects.filter(cluster__name=name).count() == size
    assert counts[0] == counts[1], counts


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
    assert client.post(URL, {"nope": 1}, format="json").status_code == 400
    # one bad record of a good answer: 400 naming it, nothing stored
    body = record("22.05/squeue-22.05.json")
    body["jobs"][4]["job_state"] = "WEIRD"
    body["jobs"][5]["end_time"] = 10**30
    body["jobs"][5]["job_state"] = "FAILED"
    response = client.post(URL, body, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"jobs[4].job_state", "jobs[5].end_time"}
    assert Job.objects.count() == 0 and Node.objects.count() == 0
    assert (
        api("otto").post(URL, record("slurmdb-job-failed.json"), format="json").status_code == 403
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
