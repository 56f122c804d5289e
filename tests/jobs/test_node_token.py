"""What a node's token may say about a job (docs/operations.md#agent-tokens-and-scopes): it
speaks only for ranks on its own nodes; ending, resizing or shrinking the job, a new attempt
of ranks and job-wide samples take a token that speaks for the whole job — a cluster's, or
the node's that holds rank 0. Each test replays an attack of the second red team."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.choices import Role
from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.services import agent_scope_set
from apps.jobs.models import Job, JobMetric, Rank
from apps.jobs.selectors import job_verdict

pytestmark = pytest.mark.django_db

STALLS = "/api/v1/ingest/stalls/"
LIB = "/usr/lib/python3.11/site-packages/torch/distributed"
START = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def token(name: str, nodes: str | None) -> APIClient:
    """An agent's client of cluster c1: scoped to `nodes`, or to the whole cluster (None)."""
    user = user_create_or_update(username=name, role=Role.AGENT)
    agent_scope_set(user=user, cluster="c1", hostlist=nodes or "")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


def host(rank: int) -> str:
    return f"gpu00{rank // 8}"  # 8 ranks a node: ranks 0–7 on gpu000, 8–15 on gpu001, …


def item(rank: int, *, started: dt.datetime = START, world: int = 32, node: str = "") -> dict:
    return {
        "rank": rank,
        "world_size": world,
        "node": node or host(rank),
        "local_rank": rank % 8,
        "pid": 1000 + rank,
        "started_at": iso(started),
    }


def stack(where: str, collective: str | None) -> list[dict]:
    frames = [
        {"file": "/home/u/train.py", "function": "main", "line": 200},
        {"file": "/home/u/train.py", "function": where, "line": 88},
    ]
    if collective:
        frames.append({"file": f"{LIB}/distributed_c10d.py", "function": collective, "line": 2501})
    return frames


def report(
    job: Job, rank: int, *, where: str = "train_step", collective: str | None = "all_reduce"
):
    return {
        "job": job.pk,
        "node": host(rank),
        "ts": iso(timezone.now() - dt.timedelta(seconds=5)),
        "rank": rank,
        "last_step": 120,
        "stalled_s": 300.0,
        "stack": stack(where, collective),
        "in_collective": collective is not None,
    }


@pytest.fixture
def hung(api, job) -> Job:
    """The job's 32 ranks registered (8 a node on gpu000–gpu003), all waiting in all_reduce
    but rank 20 (gpu002), stuck loading a batch: the culprit."""
    registered = api("ada").post(
        f"/api/v1/jobs/{job.pk}/ranks/", {"ranks": [item(r) for r in range(32)]}, "json"
    )
    assert registered.status_code == 202, registered.content
    reports = [report(job, r) for r in range(32) if r != 20]
    reports.append(report(job, 20, where="load_batch", collective=None))
    stored = api("ada").post(STALLS, {"reports": reports}, "json")
    assert stored.status_code == 202, stored.content
    return job


def culprits(job: Job) -> tuple[int, ...]:
    return job_verdict(job, timezone.now()).culprits


def test_a_node_token_cannot_report_stalls_for_ranks_of_other_nodes(hung):
    assert culprits(hung) == (20,)
    before = list(Rank.objects.order_by("rank").values_list("rank", "stack_id", "report_at"))
    for node in ("gpu000", "gpu001"):  # rank 0's node and another: neither speaks for gpu002's
        attacker = token(f"agent-{node}", node)
        framed = report(hung, 20, collective="all_reduce")  # the culprit made to look like the rest
        framed["node"] = node
        decoy = {**report(hung, 25, where="load_batch", collective=None), "node": node}
        for body in (framed, {"reports": [decoy]}, {"reports": [framed, decoy]}):
            refused = attacker.post(STALLS, body, "json")
            assert refused.status_code == 403, refused.content
            assert "outside this token's scope" in refused.json()["detail"]
    assert (
        list(Rank.objects.order_by("rank").values_list("rank", "stack_id", "report_at")) == before
    )
    assert culprits(hung) == (20,)
    # Its own ranks it reports for.
    own = token("agent-gpu002", "gpu002").post(STALLS, report(hung, 21), "json")
    assert own.status_code == 202, own.content


def test_a_node_token_cannot_move_another_nodes_rank_or_start_an_attempt(hung):
    url = f"/api/v1/jobs/{hung.pk}/ranks/"
    gpu001 = token("agent-gpu001", "gpu001")
    # Rank 20 re-registered as its own (same process), or as restarted later: refused.
    moved = gpu001.post(url, {"ranks": [item(20, node="gpu001")]}, "json")
    assert moved.status_code == 403 and "20" in moved.json()["detail"]
    later = START + dt.timedelta(hours=1)
    restart = gpu001.post(url, {"ranks": [item(8, started=later)]}, "json")
    assert restart.status_code == 403 and "new attempt" in restart.json()["detail"]
    assert set(Rank.objects.values_list("attempt", flat=True)) == {1}
    assert Rank.objects.get(rank=20).node.hostname == "gpu002"
    assert culprits(hung) == (20,)
    # The node that holds rank 0 starts the next attempt; the others then join it.
    gpu000 = token("agent-gpu000", "gpu000")
    begun = gpu000.post(url, {"ranks": [item(r, started=later) for r in range(8)]}, "json")
    assert begun.status_code == 202 and begun.json()["attempt"] == 2, begun.content
    joined = gpu001.post(url, {"ranks": [item(8, started=later)]}, "json")
    assert joined.status_code == 202 and joined.json()["attempt"] == 2, joined.content
    # Even rank 0's node registers only on its own nodes what another node holds.
    theirs = gpu000.post(url, {"ranks": [item(8, started=later, node="gpu000")]}, "json")
    assert theirs.status_code == 403


def test_ranks_are_capped_by_the_jobs_size(hung):
    url = f"/api/v1/jobs/{hung.pk}/ranks/"
    gpu000 = token("agent-gpu000", "gpu000")
    later = START + dt.timedelta(hours=1)
    huge = gpu000.post(url, {"ranks": [item(0, started=later, world=1_000_000)]}, "json")
    assert huge.status_code == 400 and "ranks[0].world_size" in huge.json(), huge.content
    many = [item(r, started=later, world=10_000, node="gpu000") for r in range(32, 10_000)]
    flood = gpu000.post(url, {"ranks": many}, "json")
    assert flood.status_code == 400 and "ranks[0].world_size" in flood.json()
    stall = token("agent-gpu003", "gpu003").post(
        STALLS, {**report(hung, 31), "rank": 40, "world_size": 64}, "json"
    )
    assert stall.status_code == 400 and "world_size" in stall.json()
    assert Rank.objects.count() == 32 and set(Rank.objects.values_list("attempt", flat=True)) == {1}
    assert culprits(hung) == (20,)


def test_job_wide_samples_take_the_node_of_rank_0(hung):
    url = f"/api/v1/jobs/{hung.pk}/metrics/"
    sample = {"ts": iso(timezone.now()), "step": 121, "step_time_s": 1.0, "tokens_per_s": 9.0}
    refused = token("agent-gpu001", "gpu001").post(url, {"samples": [sample]}, "json")
    assert refused.status_code == 403 and "job-wide samples" in refused.json()["detail"]
    assert not JobMetric.objects.exists() and culprits(hung) == (20,)
    node_sample = {**sample, "node": "gpu001"}  # its own node's sample is its to send
    own = token("agent-gpu001b", "gpu001").post(url, {"samples": [node_sample]}, "json")
    assert own.status_code == 202, own.content
    ok = token("agent-gpu000", "gpu000").post(url, {"samples": [sample]}, "json")
    assert ok.status_code == 202 and JobMetric.objects.count() == 1
    relay = token("relay-c1", None).post(
        url, {"samples": [{**sample, "ts": iso(timezone.now()), "step": 122}]}, "json"
    )
    assert relay.status_code == 202


@pytest.mark.parametrize(
    "change",
    [
        {"status": "completed"},
        {"status": "failed", "ended_at": iso(timezone.now())},
        {"ended_at": iso(timezone.now())},
        {"gpu_count": 64},
        {"n_params": 1e12},
        {"flops_per_token": 1e13},
        {"nodes": ["gpu000", "gpu001", "gpu002"]},  # gpu003 removed
        {"nodes": ["gpu000", "gpu001", "gpu002", "gpu003", "gpu006"]},  # not its node
    ],
)
def test_a_node_token_cannot_end_resize_or_shrink_the_job(hung, change):
    before = Job.objects.filter(pk=hung.pk).values().get()
    nodes = sorted(hung.nodes.values_list("hostname", flat=True))
    patched = token("agent-gpu001", "gpu001").patch(f"/api/v1/jobs/{hung.pk}/", change, "json")
    assert patched.status_code == 403, patched.content
    assert "outside this token's scope" in patched.json()["detail"]
    assert Job.objects.filter(pk=hung.pk).values().get() == before
    assert sorted(hung.nodes.values_list("hostname", flat=True)) == nodes


def test_the_red_teams_patch_is_refused_whole(hung):
    attack = {"nodes": ["gpu001", "gpu006"], "status": "completed", "gpu_count": 64}
    patched = token("agent-gpu001", "gpu001").patch(f"/api/v1/jobs/{hung.pk}/", attack, "json")
    assert patched.status_code == 403
    hung.refresh_from_db()
    assert (hung.status, hung.gpu_count, hung.nodes.count()) == ("running", 32, 4)
    # The same through `POST jobs/` naming the job by its external id.
    Job.objects.filter(pk=hung.pk).update(external_id="slurm-7")
    body = {**attack, "name": "llama-70b", "cluster": "c1", "external_id": "slurm-7"}
    posted = token("agent-gpu001b", "gpu001").post("/api/v1/jobs/", body, "json")
    assert posted.status_code == 403
    hung.refresh_from_db()
    assert (hung.status, hung.gpu_count, hung.nodes.count()) == ("running", 32, 4)


def test_what_a_node_token_may_still_do_and_what_rank_0s_node_may(hung, nodes):
    url = f"/api/v1/jobs/{hung.pk}/"
    mine = token("agent-gpu001", "gpu[001,005]")
    # Add its own node, mark the run running, re-send the values it has.
    added = mine.patch(
        url,
        {"nodes": ["gpu000", "gpu001", "gpu002", "gpu003", "gpu005"], "status": "running"},
        "json",
    )
    assert added.status_code == 200, added.content
    assert mine.patch(url, {"gpu_count": 32, "name": "llama-70b"}, "json").status_code == 200
    assert "gpu005" in set(hung.nodes.values_list("hostname", flat=True))
    # The node that holds rank 0 ends the job, as the launcher on rank 0 does.
    ended = token("agent-gpu000", "gpu000").patch(
        url, {"status": "completed", "ended_at": iso(timezone.now())}, "json"
    )
    assert ended.status_code == 200, ended.content
    hung.refresh_from_db()
    assert hung.status == "completed"


def test_a_rank_and_a_sample_name_their_node_in_any_case(api, job):
    """Hostnames compare without regard to case: `GPU000` is gpu000's, for a node's token too."""
    agent = token("agent-gpu000", "gpu000")
    url = f"/api/v1/jobs/{job.pk}/ranks/"
    assert agent.post(url, {"ranks": [item(0, node="GPU000")]}, "json").status_code == 202
    assert Rank.objects.get().node.hostname == "gpu000"
    stall = {**report(job, 0), "node": "Gpu000"}
    assert agent.post(STALLS, stall, "json").status_code == 202
    sample = {"ts": iso(timezone.now()), "step": 1, "step_time_s": 1.0, "node": "GPU000"}
    posted = agent.post(f"/api/v1/jobs/{job.pk}/metrics/", {"samples": [sample]}, "json")
    assert posted.status_code == 202, posted.content


def test_job_wide_phases_take_the_node_of_rank_0_as_samples_do(hung):
    url = f"/api/v1/jobs/{hung.pk}/phases/"
    start = timezone.now() - dt.timedelta(minutes=3)
    phase = {"name": "eval", "start": iso(start), "end": iso(start + dt.timedelta(minutes=1))}
    refused = token("agent-gpu001", "gpu001").post(url, {"phases": [phase]}, "json")
    assert refused.status_code == 403 and "job-wide phases" in refused.json()["detail"]
    own = token("agent-gpu001b", "gpu001").post(
        url, {"phases": [{**phase, "node": "gpu001"}]}, "json"
    )
    assert own.status_code == 202, own.content
    ok = token("agent-gpu000", "gpu000").post(url, {"phases": [phase]}, "json")
    assert ok.status_code == 202, ok.content
