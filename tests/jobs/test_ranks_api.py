"""Ranks and stall reports over the API: `POST jobs/{id}/ranks/`, `POST ingest/stalls/`,
`GET jobs/{id}/ranks/` (docs/api.md, Jobs)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.choices import Role
from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.services import agent_scope_set
from apps.jobs.models import Job, JobMetric, Rank, RankStack

pytestmark = pytest.mark.django_db

STALLS = "/api/v1/ingest/stalls/"
LIB = "/usr/lib/python3.11/site-packages/torch/distributed"


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def at(seconds: float) -> str:
    """`seconds` from now (negative: ago)."""
    return iso(timezone.now() + dt.timedelta(seconds=seconds))


def ranks_url(job: Job) -> str:
    return f"/api/v1/jobs/{job.pk}/ranks/"


def item(rank: int, *, world: int = 4, node: str | None = None, started: str = "", pid=None):
    body = {
        "rank": rank,
        "world_size": world,
        "node": node or f"gpu00{rank % 4}",
        "local_rank": 0,
        "started_at": started or iso(dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)),
    }
    if pid is not None:
        body["pid"] = pid
    return body


def stack(collective: str = "all_reduce", where: str = "train_step", line: int = 88) -> list:
    return [
        {"file": "/home/u/train.py", "function": "main", "line": 200},
        {"file": "/home/u/train.py", "function": where, "line": line},
        {"file": f"{LIB}/distributed_c10d.py", "function": collective, "line": 2501},
    ]


def report(job: Job, rank: int, *, ts: str = "", **changes) -> dict:
    body = {
        "job": job.pk,
        "node": f"gpu00{rank % 4}",
        "ts": ts or at(-10),
        "rank": rank,
        "last_step": 120,
        "stalled_s": 90.0,
        "stack": stack(),
        "in_collective": True,
    }
    return {**body, **changes}


def scoped(name: str, nodes: str) -> APIClient:
    """A node agent's client, scoped to `nodes` of cluster c1."""
    user = user_create_or_update(username=name, role=Role.AGENT)
    agent_scope_set(user=user, cluster="c1", hostlist=nodes)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


def rows(job: Job) -> list[tuple]:
    return list(
        Rank.objects.filter(job=job)
        .order_by("attempt", "rank")
        .values_list("attempt", "rank", "started_at", "pid", "node__hostname", "registered_at")
    )


# --- Registration ------------------------------------------------------------------------


def test_register_and_the_attempt_rule(api, job):
    ada = api("ada")
    first = ada.post(ranks_url(job), {"ranks": [item(r, pid=100 + r) for r in range(4)]}, "json")
    assert first.status_code == 202, first.content
    assert first.json() == {"accepted": 4, "attempt": 1}
    stored = rows(job)
    assert [(a, r) for a, r, *_ in stored] == [(1, 0), (1, 1), (1, 2), (1, 3)]
    # The same registration again changes nothing.
    again = ada.post(ranks_url(job), {"ranks": [item(r, pid=100 + r) for r in range(4)]}, "json")
    assert again.json() == {"accepted": 4, "attempt": 1} and rows(job) == stored
    # An older registration than the row is ignored.
    older = item(2, pid=7, started=iso(dt.datetime(2026, 12, 1, 7, 0, tzinfo=dt.UTC)))
    assert ada.post(ranks_url(job), {"ranks": [older]}, "json").json()["attempt"] == 1
    assert rows(job) == stored
    # A rank that started again later begins attempt 2; the others join it when they do.
    later = iso(dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC))
    restarted = ada.post(ranks_url(job), {"ranks": [item(0, pid=200, started=later)]}, "json")
    assert restarted.json() == {"accepted": 1, "attempt": 2}
    joined = ada.post(ranks_url(job), {"ranks": [item(1, pid=201, started=later)]}, "json")
    assert joined.json()["attempt"] == 2
    # Attempt 1's registration of rank 2, re-sent late, stays attempt 1's.
    late = ada.post(ranks_url(job), {"ranks": [item(2, pid=102)]}, "json")
    assert late.json() == {"accepted": 1, "attempt": 2}
    assert sorted(Rank.objects.filter(job=job, attempt=2).values_list("rank", "pid")) == [
        (0, 200),
        (1, 201),
    ]
    assert Rank.objects.filter(job=job, attempt=1).count() == 4


def test_operators_register_too_and_a_new_node_joins_the_job(api, job):
    body = {"ranks": [item(0, node="gpu005"), item(1, node="gpu000")]}
    response = api("otto").post(ranks_url(job), body, "json")
    assert response.status_code == 202, response.content
    assert "gpu005" in set(job.nodes.values_list("hostname", flat=True))
    assert api("mia").post(ranks_url(job), body, "json").status_code == 403


@pytest.mark.parametrize(
    ("bad", "key"),
    [
        ({"node": "ghost-1"}, "ranks[1].node"),
        ({"rank": 4}, "ranks[1].rank"),  # ≥ world_size (4)
        ({"world_size": 0}, "ranks[1].world_size"),
        ({"started_at": "yesterday"}, "ranks[1].started_at"),
        ({"started_at": "2099-01-01T00:00:00Z"}, "ranks[1].started_at"),
        ({"pid": -1}, "ranks[1].pid"),
        ({"local_rank": "zero"}, "ranks[1].local_rank"),
        ({"rank": None}, "ranks[1].rank"),
    ],
)
def test_a_bad_item_is_a_400_naming_it_and_nothing_is_stored(api, job, bad, key):
    body = {"ranks": [item(0), {**item(1), **bad}]}
    response = api("ada").post(ranks_url(job), body, "json")
    assert response.status_code == 400 and key in response.json(), response.json()
    assert not Rank.objects.exists()


def test_an_unknown_node_names_the_first_item(api, job):
    response = api("ada").post(ranks_url(job), {"ranks": [item(0, node="ghost")]}, "json")
    assert response.status_code == 400 and list(response.json()) == ["ranks[0].node"]


def test_bad_bodies(api, job):
    ada = api("ada")
    assert ada.post(ranks_url(job), {"ranks": []}, "json").status_code == 400
    assert ada.post(ranks_url(job), [item(0)], "json").status_code == 400
    many = {"ranks": [item(0)] * 10_001}
    assert "ranks" in ada.post(ranks_url(job), many, "json").json()
    assert ada.post("/api/v1/jobs/999999/ranks/", {"ranks": [item(0)]}, "json").status_code == 404


def test_a_node_agent_registers_only_for_jobs_on_its_nodes(job):
    outsider = scoped("agent-gpu005", "gpu005")  # the job runs on gpu000–gpu003
    refused = outsider.post(ranks_url(job), {"ranks": [item(0, node="gpu005")]}, "json")
    assert refused.status_code == 403 and f"job {job.pk}" in refused.json()["detail"]
    mine = scoped("agent-gpu000", "gpu000")
    theirs = mine.post(ranks_url(job), {"ranks": [item(2, node="gpu002")]}, "json")
    assert theirs.status_code == 403 and "gpu002" in theirs.json()["detail"]
    assert not Rank.objects.exists()
    ok = mine.post(ranks_url(job), {"ranks": [item(0, node="gpu000")]}, "json")
    assert ok.status_code == 202 and ok.json() == {"accepted": 1, "attempt": 1}


# --- Stall reports -----------------------------------------------------------------------


def test_a_single_report_registers_its_rank(api, job):
    response = api("ada").post(STALLS, report(job, 3, world_size=32), "json")
    assert response.status_code == 202, response.content
    assert response.json() == {"accepted": 1}
    row = Rank.objects.get(job=job)
    assert (row.attempt, row.rank, row.world_size, row.node.hostname) == (1, 3, 32, "gpu003")
    assert row.started_at is None and row.pid is None
    assert row.stalled and row.last_step == 120 and row.in_collective
    assert row.stack is not None and row.stack.collective == "all_reduce"
    assert row.stack.frame == "train_step (/home/u/train.py:88)"
    assert row.first_report_at == row.report_at
    assert row.stalled_since == row.report_at - dt.timedelta(seconds=90)


def test_an_unregistered_rank_takes_the_largest_known_world_size(api, job):
    api("ada").post(ranks_url(job), {"ranks": [item(0, world=16)]}, "json")
    api("ada").post(STALLS, report(job, 5), "json")
    assert Rank.objects.get(job=job, rank=5).world_size == 16
    assert Rank.objects.filter(job=job, attempt=1).count() == 2


def test_a_batch_stores_each_stack_once_and_a_duplicate_once(api, job):
    ada = api("ada")
    ts = at(-20)
    body = {"reports": [report(job, r, ts=ts) for r in range(4)]}
    assert ada.post(STALLS, body, "json").json() == {"accepted": 4}
    assert RankStack.objects.count() == 1 and Rank.objects.count() == 4
    before = list(Rank.objects.order_by("rank").values())
    # The batch retried, and a report not newer than the stored one: stored once.
    assert ada.post(STALLS, body, "json").json() == {"accepted": 4}
    same_ts = report(job, 0, ts=ts, last_step=7, stack=stack("barrier"))
    assert ada.post(STALLS, same_ts, "json").status_code == 202
    assert list(Rank.objects.order_by("rank").values()) == before
    assert RankStack.objects.count() == 1
    # Another stack: one more row, shared by the ranks in it.
    other = {"reports": [report(job, r, ts=at(-5), stack=stack("barrier")) for r in (1, 2)]}
    ada.post(STALLS, other, "json")
    assert RankStack.objects.count() == 2
    assert Rank.objects.filter(stack__collective="barrier").count() == 2


def test_a_deep_stack_keeps_its_innermost_64_frames(api, job):
    frames = [{"file": "/home/u/deep.py", "function": f"f{i}", "line": i} for i in range(100)]
    response = api("ada").post(STALLS, report(job, 0, stack=frames), "json")
    assert response.status_code == 202, response.content
    kept = RankStack.objects.get().frames
    assert len(kept) == 64 and kept[0]["function"] == "f36" and kept[-1]["function"] == "f99"
    assert RankStack.objects.get().frame == "f99 (/home/u/deep.py:99)"
    bad = [*frames[:-1], {"file": "/home/u/deep.py", "function": "f", "line": -1}]
    refused = api("ada").post(STALLS, {"reports": [report(job, 1, stack=bad)]}, "json")
    assert refused.status_code == 400 and "reports[0].stack[99].line" in refused.json()


def test_resumed_sets_resumed_at_and_a_new_stall_clears_it(api, job):
    ada = api("ada")
    ada.post(STALLS, report(job, 0, ts=at(-300), stalled_s=60.0), "json")
    first = Rank.objects.get()
    ada.post(STALLS, report(job, 0, ts=at(-240), stalled_s=120.0), "json")  # the same stall
    kept = Rank.objects.get()
    assert kept.first_report_at == first.first_report_at
    assert kept.stalled_since == first.stalled_since and kept.stalled_s == 120.0
    ada.post(STALLS, report(job, 0, ts=at(-200), resumed=True, stalled_s=160.0, stack=[]), "json")
    resumed = Rank.objects.get()
    assert resumed.resumed_at == resumed.report_at and not resumed.stalled
    assert resumed.stack_id == kept.stack_id  # what it was stuck in, kept
    ada.post(STALLS, report(job, 0, ts=at(-30), stalled_s=60.0), "json")
    again = Rank.objects.get()
    assert again.stalled and again.resumed_at is None
    assert again.first_report_at == again.report_at != first.first_report_at


def test_a_report_older_than_its_process_is_ignored(api, job):
    api("ada").post(ranks_url(job), {"ranks": [item(0, started=at(-60))]}, "json")
    api("ada").post(STALLS, report(job, 0, ts=at(-120)), "json")
    assert Rank.objects.get().report_at is None


def test_in_collective_null_is_read_off_the_stack(api, job):
    api("ada").post(STALLS, report(job, 0, in_collective=None), "json")
    api("ada").post(STALLS, report(job, 1, in_collective=None, stack=stack()[:2]), "json")
    assert dict(Rank.objects.values_list("rank", "in_collective")) == {0: True, 1: False}


@pytest.mark.parametrize(
    ("bad", "key"),
    [
        ({"ts": "soon"}, "reports[1].ts"),
        ({"job": 999_999}, "reports[1].job"),
        ({"node": "ghost-1"}, "reports[1].node"),
        ({"stalled_s": -1}, "reports[1].stalled_s"),
        ({"stack": "frames"}, "reports[1].stack"),
        ({"in_collective": "yes"}, "reports[1].in_collective"),
        ({"rank": 8, "world_size": 8}, "reports[1].rank"),
        ({"last_step": 1.5}, "reports[1].last_step"),
    ],
)
def test_a_bad_report_is_a_400_naming_it_and_nothing_is_stored(api, job, bad, key):
    body = {"reports": [report(job, 0), {**report(job, 1), **bad}]}
    response = api("ada").post(STALLS, body, "json")
    assert response.status_code == 400 and key in response.json(), response.json()
    assert not Rank.objects.exists() and not RankStack.objects.exists()


def test_a_single_reports_errors_name_its_fields(api, job):
    response = api("ada").post(STALLS, {**report(job, 0), "ts": "soon", "job": None}, "json")
    assert response.status_code == 400 and {"ts", "job"} <= set(response.json())
    unknown = api("ada").post(STALLS, report(job, 0, node="ghost"), "json")
    assert unknown.status_code == 400 and list(unknown.json()) == ["node"]


def test_stall_reports_are_for_agents_within_their_scope(api, job):
    assert api("otto").post(STALLS, report(job, 0), "json").status_code == 403
    outsider = scoped("agent-gpu005", "gpu005")
    refused = outsider.post(STALLS, report(job, 0, node="gpu005"), "json")
    assert refused.status_code == 403 and str(job.pk) in refused.json()["detail"]
    mine = scoped("agent-gpu000", "gpu000")
    theirs = mine.post(STALLS, report(job, 2), "json")  # rank 2 runs on gpu002
    assert theirs.status_code == 403 and "gpu002" in theirs.json()["detail"]
    assert not Rank.objects.exists()
    assert mine.post(STALLS, report(job, 0), "json").status_code == 202


# --- Reading -----------------------------------------------------------------------------


def test_get_ranks_answers_the_attempt_its_verdict_and_each_stack_once(
    api, job, django_assert_max_num_queries
):
    ada = api("ada")
    ada.post(ranks_url(job), {"ranks": [item(r, world=8, node="gpu000") for r in range(8)]}, "json")
    reports = [report(job, r, node="gpu000") for r in range(8)]
    reports[3] = report(job, 3, node="gpu000", stack=stack(where="load_batch", line=40))
    reports[3]["in_collective"] = False
    reports[3]["stack"] = reports[3]["stack"][:2]
    ada.post(STALLS, {"reports": reports}, "json")
    Job.objects.filter(pk=job.pk).update(progress_at=timezone.now() - dt.timedelta(hours=1))
    with django_assert_max_num_queries(12):
        response = api("mia").get(ranks_url(job))
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {
        "job",
        "attempt",
        "world_size",
        "registered",
        "stall_s",
        "verdict",
        "stacks",
        "ranks",
    }
    assert (body["job"], body["attempt"], body["world_size"], body["registered"]) == (
        job.pk,
        1,
        8,
        8,
    )
    assert body["stall_s"] == 60.0  # no step times yet
    assert len(body["stacks"]) == 2
    digests = {r["report"]["stack"] for r in body["ranks"]}
    assert digests == set(body["stacks"])
    verdict = body["verdict"]
    assert verdict["minority"] and verdict["culprits"] == [3]
    assert verdict["culprit_nodes"] == ["gpu000"] and verdict["due"]
    assert verdict["collective"] == "all_reduce" and verdict["step"] == 120
    assert verdict["sentence"].startswith(
        "rank 3 on gpu000 last stepped at 120 and is in `load_batch`"
    )
    three = body["ranks"][3]
    assert three["rank"] == 3 and three["verdict"] == "outside" and three["node"] == "gpu000"
    assert set(three["report"]) == {
        "ts",
        "last_step",
        "stalled_s",
        "stalled_since",
        "first_report_at",
        "in_collective",
        "resumed_at",
        "frame",
        "stack",
    }
    assert three["report"]["frame"] == "load_batch (/home/u/train.py:40)"
    assert body["stacks"][three["report"]["stack"]][-1]["function"] == "load_batch"
    assert api("mia").get(ranks_url(job) + "?attempt=1").json()["attempt"] == 1
    assert api("mia").get(ranks_url(job) + "?attempt=2").status_code == 404
    assert "attempt" in api("mia").get(ranks_url(job) + "?attempt=x").json()
    assert api("ada").get(ranks_url(job)).status_code == 403  # agents never read


def test_get_ranks_of_a_job_without_any(api, job):
    body = api("mia").get(ranks_url(job)).json()
    assert body["attempt"] is None and body["ranks"] == [] and body["stacks"] == {}
    assert body["verdict"]["sentence"] == "no ranks registered"


def test_the_stall_window_comes_from_the_jobs_step_times(api, job):
    start = timezone.now() - dt.timedelta(hours=1)
    JobMetric.objects.bulk_create(
        JobMetric(
            job=job,
            ts=start + dt.timedelta(seconds=30 * i),
            step=i,
            step_time_s=30.0,
            tokens_per_s=1.0,
        )
        for i in range(60)
    )
    api("ada").post(ranks_url(job), {"ranks": [item(0)]}, "json")
    assert api("mia").get(ranks_url(job)).json()["stall_s"] == 150.0


def test_a_rank_registered_by_its_report_is_completed_by_its_registration(api, job):
    ada = api("ada")
    ada.post(STALLS, report(job, 1, ts=at(-30)), "json")
    own = ada.post(ranks_url(job), {"ranks": [item(1, pid=42, started=at(-3_600))]}, "json")
    assert own.json() == {"accepted": 1, "attempt": 1}
    row = Rank.objects.get(job=job)
    assert (row.attempt, row.pid, row.world_size) == (1, 42, 4) and row.report_at is not None
    # A process that started after the newest report of a report-made row is a new run.
    ada.post(STALLS, report(job, 2, ts=at(-30)), "json")
    later = ada.post(ranks_url(job), {"ranks": [item(2, pid=43, started=at(-10))]}, "json")
    assert later.json()["attempt"] == 2
    assert Rank.objects.get(job=job, attempt=2).report_at is None


def test_stacks_no_rank_points_at_are_pruned(api, job):
    """issue 41: stall stacks grew without a bound: a rank keeps only its newest stack, and
    the stacks none points at any more go (docs/operations.md, Backups)."""
    from apps.jobs import tasks
    from kuaeweb.schedule import beat_schedule

    assert beat_schedule()["prune-rank-stacks"]["task"] == "apps.jobs.tasks.prune_stacks"
    ada = api("ada")
    for n, where in enumerate(("load_batch", "forward", "backward")):
        body = {
            "reports": [report(job, r, ts=at(-30 + n), stack=stack(where=where)) for r in range(4)]
        }
        assert ada.post(STALLS, body, "json").status_code == 202
    assert RankStack.objects.count() == 3
    assert tasks.prune_stacks.apply().get() == 2
    (kept,) = RankStack.objects.all()
    assert set(Rank.objects.values_list("stack", flat=True)) == {kept.pk}
    assert "backward" in kept.frame
