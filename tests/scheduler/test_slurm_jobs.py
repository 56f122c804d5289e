"""Slurm job records of every shape → plain records (docs/integrations.md, 4. Slurm), and which job
a record belongs to. Pure: no database."""

from __future__ import annotations

import copy
import datetime as dt
import json

import pytest

from apps.common.errors import BatchError
from apps.scheduler.slurm_jobs import SlurmJob, parse_slurm
from apps.scheduler.slurm_merge import JobState, apply, job_for
from tests.support import SHARED

DATA = SHARED / "slurm"
V2205 = DATA / "22.05"


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def at(seconds: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC)


def by_id(records: list[SlurmJob]) -> dict[str, list[SlurmJob]]:
    out: dict[str, list[SlurmJob]] = {}
    for r in records:
        out.setdefault(r.job_id, []).append(r)
    return out


def test_25x_accounting_records():
    (failed,) = parse_slurm(load("slurmdb-job-failed.json"))
    assert (failed.job_id, failed.status, failed.hostnames) == ("5739", "failed", ["cn1"])
    assert failed.started_at == at(1762942460) and failed.submitted_at == at(1762942459)
    assert failed.restart_cnt == 0 and failed.array_job_id is None
    (running,) = parse_slurm(load("slurmdb-job-gpus-running.json"))
    assert running.status == "running" and running.ended_at is None
    # TRES are there (cpu, mem, node…) but no gres/gpu: this Slurm does not account GPUs,
    # and such a record counts as 0 GPUs, not nodes × gpus_per_node.
    assert running.gpus == 0


def test_22_05_sacct_battery():
    jobs = by_id(parse_slurm(load("22.05/sacct-22.05-battery.json")))
    assert len(jobs["8"]) == 3  # two NODE_FAIL attempts, then cancelled while pending
    first, second, cancelled = jobs["8"]
    assert [r.state for r in jobs["8"]] == ["NODE_FAIL", "NODE_FAIL", "CANCELLED"]
    assert first.restart_cnt is None  # 22.05's accounting has no restart_cnt
    assert (first.key, second.key, cancelled.key) == (1796043921, 1796043925, 1796044057)
    assert second.started_at == at(1796044050) and second.ended_at == at(1796044057)
    assert cancelled.started_at is None and cancelled.ended_at == at(1796044070)
    assert cancelled.hostnames == [] and cancelled.hostlist == ""
    (two,) = jobs["5"]
    assert two.hostnames == ["rcgpu01", "rcgpu02"] and two.hostlist == "rcgpu[01-02]"
    assert two.gpus == 16
    assert [(r.array_job_id, r.array_task_id) for r in (*jobs["9"], *jobs["10"])] == [
        (9, 1),
        (9, 0),
    ]
    assert jobs["1"][0].array_job_id is None
    assert {k: v[0].status for k, v in jobs.items() if k in ("1", "2", "3", "4")} == {
        "1": "completed",
        "2": "failed",
        "3": "cancelled",
        "4": "failed",
    }


def test_22_05_cpu_only_and_gpus_flag():
    cpu, flag = parse_slurm(load("22.05/sacct-22.05-cpu-only-and-gpus-flag.json"))
    assert (cpu.name, cpu.gpus) == ("cpu-only", 0)
    assert (flag.name, flag.gpus) == ("gpus-flag", 3)
    no_tres = copy.deepcopy(load("22.05/sacct-22.05-cpu-only-and-gpus-flag.json"))
    del no_tres["jobs"][0]["tres"]
    no_tres["jobs"][1]["tres"] = {"allocated": [], "requested": []}
    assert [r.gpus for r in parse_slurm(no_tres)] == [None, None]


def test_typed_gpus_are_not_counted_twice():
    body = load("22.05/sacct-22.05-cpu-only-and-gpus-flag.json")
    gres = [
        {"type": "gres", "name": "gpu", "id": 1001, "count": 8},
        {"type": "gres", "name": "gpu:h100", "id": 1002, "count": 8},
    ]
    body["jobs"][0]["tres"]["allocated"] += gres
    body["jobs"][1]["tres"]["allocated"] = [gres[1], {**gres[1], "name": "gpu:a100"}]
    assert [r.gpus for r in parse_slurm(body)] == [8, 16]


def test_22_05_squeue():
    jobs = {r.job_id: r for r in parse_slurm(load("22.05/squeue-22.05.json"))}
    running = jobs["1"]
    assert running.status == "running" and running.gpus == 4 and running.restart_cnt == 0
    assert running.started_at == at(1796043825) and running.submitted_at == at(1796043824)
    assert running.ended_at is None  # squeue's end_time of a running job is its time limit
    pending = jobs["5"]
    assert pending.status == "pending" and pending.hostnames == []
    assert pending.started_at is None and pending.ended_at is None  # estimates, dropped
    assert pending.gpus == 16  # requested: tres_req_str
    assert jobs["2"].status == "failed" and jobs["2"].ended_at == at(1796043828)
    assert jobs["6"].started_at is None


def test_22_05_slurmrestd_both_apis():
    ctld = {r.job_id: r for r in parse_slurm(load("22.05/slurmrestd-v0.0.38-slurm-jobs.json"))}
    assert ctld["1"].status == "completed" and ctld["1"].ended_at == at(1796043845)
    assert ctld["5"].started_at is None and ctld["5"].gpus == 16
    db = {r.job_id: r for r in parse_slurm(load("22.05/slurmrestd-v0.0.38-slurmdb-jobs.json"))}
    assert db["4"].status == "running" and db["4"].ended_at is None  # end = when asked
    assert db["5"].status == "pending" and db["5"].started_at is None and db["5"].gpus == 16


def test_25x_controller_record_wrapped_numbers():
    """squeue --json of Slurm 24/25 (v0.0.40+): `job_state` a list, numbers wrapped."""
    record = load("22.05/squeue-22.05.json")["jobs"][0]
    record.update(
        job_state=["RUNNING", "COMPLETING"],
        submit_time={"set": True, "infinite": False, "number": 1796043824},
        start_time={"set": True, "infinite": False, "number": 1796043825},
        end_time={"set": True, "infinite": False, "number": 1827579825},
        array_job_id={"set": True, "infinite": False, "number": 77},
        array_task_id={"set": True, "infinite": False, "number": 3},
        restart_cnt=2,
        tres_alloc_str="cpu=1,node=1,billing=1,gres/gpu=8,gres/gpu:h100=8",
    )
    (job,) = parse_slurm({"jobs": [record]})
    assert (job.status, job.gpus, job.restart_cnt) == ("running", 8, 2)
    assert (job.array_job_id, job.array_task_id) == (77, 3)
    assert job.submitted_at == at(1796043824) and job.ended_at is None
    unset = {"set": False, "infinite": False, "number": 0}
    record.update(array_job_id=unset, array_task_id=unset, job_state="PENDING")
    (job,) = parse_slurm({"jobs": [record]})
    assert job.array_job_id is None and job.status == "pending"


def test_bad_records_name_their_field():
    squeue = load("22.05/squeue-22.05.json")["jobs"]
    sacct = load("22.05/sacct-22.05-battery.json")["jobs"]
    bad = [
        {**squeue[0], "job_state": "WEIRD"},
        {**sacct[0], "state": {"current": ["WEIRD"]}},
        {**sacct[0], "nodes": "gpu[1-"},
        {**sacct[0], "time": {**sacct[0]["time"], "end": 1}},
        {**squeue[0], "job_state": "COMPLETED", "submit_time": 10**20},
        {**squeue[0], "tres_alloc_str": "gres/gpu=99999999999"},
        {**sacct[0], "job_id": {"nope": 1}},
        "nope",
        squeue[0],
    ]
    with pytest.raises(BatchError) as err:
        parse_slurm({"jobs": bad})
    assert set(err.value.errors) == {
        "jobs[0].job_state",
        "jobs[1].state.current",
        "jobs[2].nodes",
        "jobs[3].time.end",
        "jobs[4].submit_time",
        "jobs[5].tres_alloc_str",
        "jobs[6].job_id",
        "jobs[7]",
    }


def _job(records: list[SlurmJob], known: list[JobState] | None = None) -> list[JobState]:
    """Apply records the way the intake does (sorted by id and attempt)."""
    jobs = list(known or [])
    now = at(1796100000)
    for record in sorted(records, key=lambda r: (r.job_id, r.key)):
        job = job_for(jobs, record)
        if job is None:
            job = JobState(external_id=record.job_id, hostnames=())
            jobs.append(job)
        apply(job, record, gpus_per_node=8, now=now)
    return jobs


def test_requeued_attempts_are_one_job_a_reused_id_another():
    records = by_id(parse_slurm(load("22.05/sacct-22.05-battery.json")))["8"]
    (job,) = _job(records)
    assert len(job.attempts) == 3 and job.submitted_at == at(1796043921)
    assert job.started_at == at(1796043921) and job.status == "cancelled"
    assert job.ended_at == at(1796044070) and job.restart_count == 1
    assert job.hostnames == ("rcgpu02",)
    # In any order within an answer, and an attempt at a time, even the later first:
    # each attempt was submitted when the one before it ended.
    (reverse,) = _job(records[::-1])
    assert reverse.attempts.keys() == job.attempts.keys()
    (again,) = _job(records[1:2])
    assert len(_job(records[:1], [again])) == 1
    assert len(_job(records[2:], [again])) == 1
    assert again.attempts.keys() == job.attempts.keys()
    assert (again.started_at, again.ended_at, again.status) == (
        job.started_at,
        job.ended_at,
        job.status,
    )
    # Slurm restarted with fresh state: job 8 again, submitted a day later — a new job.
    reused = copy.deepcopy(load("22.05/sacct-22.05-requeued-twice.json"))
    reused["jobs"] = reused["jobs"][:1]
    reused["jobs"][0]["time"].update(
        submission=1796130000, start=1796130001, end=1796130100, eligible=1796130000
    )
    jobs = _job(parse_slurm(reused), [job])
    assert len(jobs) == 2 and jobs[1].submitted_at == at(1796130000)
    assert job.status == "cancelled"  # the first one untouched


def test_a_launcher_registered_job_is_adopted_once():
    """A job registered by `POST jobs/` (no submit time) after Slurm submitted it is that
    job; one registered before (a reused id) is not."""
    (record,) = parse_slurm(load("slurmdb-job-failed.json"))
    later = JobState(external_id="5739", pk=1, created_at=at(1762942470), hostnames=())
    assert job_for([later], record) is later
    earlier = JobState(external_id="5739", pk=1, created_at=at(1700000000), hostnames=())
    assert job_for([earlier], record) is None
