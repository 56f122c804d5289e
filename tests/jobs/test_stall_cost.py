"""What a single stall report costs, and that its short path keeps every rule of the batch
path (apps/jobs/stall_store.py; docs/api.md, `POST /api/v1/ingest/stalls/`): a burst of 10,000
reports, one a rank, is taken within a minute because each is one read and one write."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework import exceptions

from apps.accounts import token_cache
from apps.accounts.models import ApiToken, hash_token
from apps.accounts.services import token_revoke
from apps.jobs.models import Job, Rank, RankStack
from tests.jobs.test_ranks_api import STALLS, at, item, ranks_url, report, scoped, stack

pytestmark = pytest.mark.django_db


def statements(queries: CaptureQueriesContext) -> list[str]:
    """The statements a request sent, by their first word, less the test's savepoints."""
    words = [q["sql"].split(None, 1)[0].upper() for q in queries.captured_queries]
    return [w for w in words if w not in ("SAVEPOINT", "RELEASE")]


def registered(api, job: Job) -> None:  # noqa: ANN001
    """The job's four ranks registered, and rank 1's stack stored by an earlier report."""
    ranks = api("ada").post(ranks_url(job), {"ranks": [item(r) for r in range(4)]}, "json")
    assert ranks.status_code == 202, ranks.content
    first = api("ada").post(STALLS, report(job, 1, ts=at(-60)), "json")
    assert first.status_code == 202 and RankStack.objects.count() == 1


@pytest.mark.parametrize("who", ["relay", "node"])
def test_a_single_report_is_one_read_and_one_write(api, job, who):
    registered(api, job)
    client = api("ada") if who == "relay" else scoped("agent-gpu001", "gpu001")
    client.post(STALLS, report(job, 1, ts=at(-50)), "json")  # its token remembered
    with CaptureQueriesContext(connection) as queries:
        response = client.post(STALLS, report(job, 1, ts=at(-40), last_step=121), "json")
    assert response.status_code == 202 and response.json() == {"accepted": 1}
    assert statements(queries) == ["SELECT", "UPDATE"], queries.captured_queries
    row = Rank.objects.get(job=job, rank=1)
    assert row.last_step == 121 and row.stack == RankStack.objects.get()
    # A duplicate (not newer than the stored report) is read and not written.
    with CaptureQueriesContext(connection) as queries:
        again = client.post(STALLS, report(job, 1, ts=at(-45), last_step=7), "json")
    assert again.status_code == 202 and statements(queries) == ["SELECT"]
    assert Rank.objects.get(job=job, rank=1).last_step == 121


def test_a_new_stack_is_stored_once_and_a_resumed_report_keeps_the_stalls(api, job):
    registered(api, job)
    ada = api("ada")
    barrier = report(job, 2, ts=at(-30), stack=stack("barrier"))
    assert ada.post(STALLS, barrier, "json").status_code == 202
    assert ada.post(STALLS, {**barrier, "rank": 3}, "json").status_code == 202
    assert RankStack.objects.count() == 2
    assert set(
        Rank.objects.filter(rank__in=(2, 3)).values_list("stack__collective", flat=True)
    ) == {"barrier"}
    resumed = report(job, 2, ts=at(-20), resumed=True, stack=[], stalled_s=40.0)
    assert ada.post(STALLS, resumed, "json").status_code == 202
    row = Rank.objects.get(job=job, rank=2)
    assert row.resumed_at == row.report_at and row.stack.collective == "barrier"


def test_the_short_path_refuses_what_the_batch_path_refuses(api, job):
    registered(api, job)
    gpu001 = scoped("agent-gpu001", "gpu001")
    gpu001.post(STALLS, report(job, 1, ts=at(-50)), "json")  # its token remembered
    before = list(Rank.objects.order_by("rank").values_list("rank", "report_at", "stack_id"))
    # Rank 2 runs on gpu002: a 403 naming the rank, though the report names gpu001.
    theirs = gpu001.post(STALLS, report(job, 2, node="gpu001"), "json")
    assert theirs.status_code == 403 and "rank 2" in theirs.json()["detail"], theirs.content
    # A node that is not its own, a job that does not exist: refused alike, named.
    node = gpu001.post(STALLS, report(job, 1, node="gpu002"), "json")
    assert node.status_code == 403 and "gpu002" in node.json()["detail"]
    ghost = gpu001.post(STALLS, {**report(job, 1), "job": 999_999}, "json")
    assert ghost.status_code == 403 and "999999" in ghost.json()["detail"]
    # A world size past the job's GPU count, an unknown node (a relay's): 400s naming them.
    big = api("ada").post(STALLS, report(job, 1, world_size=64), "json")
    assert big.status_code == 400 and list(big.json()) == ["world_size"]
    unknown = api("ada").post(STALLS, report(job, 1, node="ghost-1"), "json")
    assert unknown.status_code == 400 and list(unknown.json()) == ["node"]
    assert list(Rank.objects.order_by("rank").values_list("rank", "report_at", "stack_id")) == (
        before
    )
    # A job elsewhere: a node token of the same cluster whose nodes the job does not run on.
    outsider = scoped("agent-gpu005", "gpu005")
    refused = outsider.post(STALLS, report(job, 1, node="gpu005"), "json")
    assert refused.status_code == 403 and str(job.pk) in refused.json()["detail"]
    # Its own rank of a job that no longer runs on its nodes (taken off the job): the job.
    job.nodes.remove(*job.nodes.filter(hostname="gpu001"))
    off = gpu001.post(STALLS, report(job, 1), "json")
    assert off.status_code == 403 and f"job {job.pk}" in off.json()["detail"], off.content


def test_a_new_attempt_is_seen_by_the_next_report(api, job):
    registered(api, job)
    later = (timezone.now() - dt.timedelta(minutes=5)).isoformat()
    restarted = api("ada").post(ranks_url(job), {"ranks": [item(0, started=later)]}, "json")
    assert restarted.json()["attempt"] == 2
    assert api("ada").post(STALLS, report(job, 0, ts=at(-10)), "json").status_code == 202
    assert api("ada").post(STALLS, report(job, 1, ts=at(-10)), "json").status_code == 202
    now = dict(Rank.objects.filter(attempt=2).values_list("rank", "report_at"))
    assert set(now) == {0, 1} and all(now.values())  # rank 1 registered into attempt 2
    assert Rank.objects.get(attempt=1, rank=0).report_at is None


def test_a_revoked_token_is_refused_at_once_in_its_process(api, job, users):
    registered(api, job)
    ada = api("ada")
    assert ada.post(STALLS, report(job, 1, ts=at(-30)), "json").status_code == 202
    token_revoke(user=users["ada"])
    assert ada.post(STALLS, report(job, 1, ts=at(-20)), "json").status_code == 401


def test_a_token_revoked_by_another_process_is_refused_within_the_ttl(users):
    token = ApiToken.objects.get(key_hash=hash_token(ApiToken.issue(users["ada"])))
    live = [True]
    loads = []

    def load():  # noqa: ANN202 - what user_for_token does: refuse once revoked
        loads.append(1)
        if not live[0]:
            raise exceptions.AuthenticationFailed("invalid, revoked or expired token")
        return users["ada"], token

    key = "k" * 64
    assert token_cache.cached(key, load, clock=lambda: 100.0) == (users["ada"], token)
    live[0] = False  # revoked elsewhere: this process's signals never heard of it
    assert token_cache.cached(key, load, clock=lambda: 100.0 + token_cache.TTL_S - 0.1)
    assert len(loads) == 1
    with pytest.raises(exceptions.AuthenticationFailed):
        token_cache.cached(key, load, clock=lambda: 100.0 + token_cache.TTL_S)
    with pytest.raises(exceptions.AuthenticationFailed):  # and not remembered as live again
        token_cache.cached(key, load, clock=lambda: 100.0 + token_cache.TTL_S)
    assert len(loads) == 3
