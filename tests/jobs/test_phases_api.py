"""`POST jobs/{id}/phases/` and `GET` (docs/api.md, Jobs; docs/agent.md, Phases): time a run
spends not training, all or nothing, each problem named `phases[i].field`; a phase re-sent is
stored once; a node's token writes only for a job on its nodes and names only its nodes."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.choices import Role
from apps.accounts.services import token_issue, user_create_or_update
from apps.fleet.services import agent_scope_set
from apps.jobs.models import Job, JobPhase
from apps.jobs.services import job_create

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=0)
T0 = NOW - dt.timedelta(hours=3)


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def url(job: Job) -> str:
    return f"/api/v1/jobs/{job.pk}/phases/"


def agent(nodes: str | None, name: str = "trainer") -> APIClient:
    """An agent's client of cluster c1, scoped to `nodes` (None: the whole cluster)."""
    user = user_create_or_update(username=name, role=Role.AGENT)
    agent_scope_set(user=user, cluster="c1", hostlist=nodes or "")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


def phase(name: str, start_min: float, end_min: float, **more: object) -> dict:
    return {
        "name": name,
        "start": iso(T0 + dt.timedelta(minutes=start_min)),
        "end": iso(T0 + dt.timedelta(minutes=end_min)),
        **more,
    }


def stored(job: Job) -> list[tuple]:
    return list(
        JobPhase.objects.filter(job=job)
        .order_by("start", "name")
        .values_list("name", "start", "end", "node__hostname", "step")
    )


def test_phases_are_accepted_and_listed(job, api):
    client = agent("gpu000")
    body = {
        "phases": [
            phase("startup", 0, 4, node="GPU000"),
            phase("checkpoint_restore", 4, 5.5, step=1200, node="gpu000"),
            phase("eval", 30, 33),
        ]
    }
    answer = client.post(url(job), body, format="json")
    assert answer.status_code == 202, answer.content
    assert answer.json() == {"accepted": 3}
    assert stored(job) == [
        ("startup", T0, T0 + dt.timedelta(minutes=4), "gpu000", None),
        (
            "checkpoint_restore",
            T0 + dt.timedelta(minutes=4),
            T0 + dt.timedelta(minutes=5.5),
            "gpu000",
            1200,
        ),
        ("eval", T0 + dt.timedelta(minutes=30), T0 + dt.timedelta(minutes=33), None, None),
    ]
    listed = api("mia").get(url(job)).json()["results"]
    assert [(p["name"], p["duration_s"], p["node"], p["step"]) for p in listed] == [
        ("startup", 240.0, "gpu000", None),
        ("checkpoint_restore", 90.0, "gpu000", 1200),
        ("eval", 180.0, None, None),
    ]


def test_a_resent_phase_is_stored_once_and_updated(job):
    client = agent("gpu000")
    assert (
        client.post(url(job), {"phases": [phase("eval", 30, 31)]}, format="json").status_code == 202
    )
    again = {"phases": [phase("eval", 30, 33, step=500), phase("eval", 30, 33, step=500)]}
    assert client.post(url(job), again, format="json").status_code == 202
    assert stored(job) == [
        ("eval", T0 + dt.timedelta(minutes=30), T0 + dt.timedelta(minutes=33), None, 500)
    ]


def test_an_operator_may_post_phases_after_the_fact(job, api):
    weeks_ago = NOW - dt.timedelta(days=20)
    body = {
        "phases": [
            {
                "name": "data_wait",
                "start": iso(weeks_ago),
                "end": iso(weeks_ago + dt.timedelta(hours=1)),
            }
        ]
    }
    assert api("otto").post(url(job), body, format="json").status_code == 202
    assert api("mia").post(url(job), body, format="json").status_code == 403  # readers only read
    assert [p["name"] for p in api("mia").get(url(job)).json()["results"]] == ["data_wait"]


@pytest.mark.parametrize(
    ("bad", "field", "words"),
    [
        (phase("eval", 10, 9), "phases[1].end", "at or after start"),
        (phase("eval", -30 * 1440 - 1, 0), "phases[1].end", "30 days"),
        # A day ahead: the times are taken when the module is collected, which in a whole
        # suite's run may be many minutes before the test runs.
        (phase("eval", 0, 180 + 1440), "phases[1].end", "future"),
        (phase("eval", 180 + 1440, 180 + 1441), "phases[1].start", "future"),
        (phase("", 0, 1), "phases[1].name", "non-empty"),
        (phase("x" * 65, 0, 1), "phases[1].name", "64"),
        (phase("eval phase", 0, 1), "phases[1].name", "letters"),
        ({"name": "eval", "start": iso(T0)}, "phases[1].end", "required"),
        (phase("eval", 0, 1, step=-1), "phases[1].step", "≥ 0"),
        (phase("eval", 0, 1, node="nowhere"), "phases[1].node", "unknown node"),
    ],
)
def test_a_bad_phase_rejects_the_batch_naming_it(job, api, bad, field, words):
    body = {"phases": [phase("startup", 0, 4), bad]}
    answer = api("otto").post(url(job), body, format="json")
    assert answer.status_code == 400, answer.content
    assert words in " ".join(answer.json()[field])
    assert stored(job) == []  # nothing stored on error


def test_batch_bounds(job, api):
    assert api("otto").post(url(job), {"phases": []}, format="json").status_code == 400
    many = {"phases": [phase("eval", 0, 1)] * 10_001}
    answer = api("otto").post(url(job), many, format="json")
    assert answer.status_code == 400 and "10000" in str(answer.json()["phases"])


def test_a_node_token_writes_only_for_jobs_on_its_nodes(job, cluster, nodes):
    other, _ = job_create(
        cluster=cluster, nodes=nodes[4:6], name="other", gpu_count=16, status="running"
    )
    client = agent("gpu000")  # job runs on gpu000–gpu003; `other` on gpu004–gpu005
    assert (
        client.post(url(other), {"phases": [phase("eval", 0, 1)]}, format="json").status_code == 403
    )
    assert stored(other) == []
    # On its own job, it names only its own nodes.
    body = {"phases": [phase("eval", 0, 1, node="gpu001")]}
    assert client.post(url(job), body, format="json").status_code == 403
    assert stored(job) == []
    # A job that does not exist is refused alike.
    assert (
        client.post(
            "/api/v1/jobs/999999/phases/", {"phases": [phase("eval", 0, 1)]}, format="json"
        ).status_code
        == 403
    )
    # The cluster's token may write for both.
    whole = agent(None, name="relay")
    assert (
        whole.post(
            url(other), {"phases": [phase("eval", 0, 1, node="gpu004")]}, format="json"
        ).status_code
        == 202
    )


def test_the_job_page_shows_time_not_spent_training(job, api, client, users):
    body = {
        "phases": [
            phase("startup", 0, 4, node="gpu000"),
            phase("eval", 30, 33, step=500),
            phase("eval", 60, 63, step=1000),
        ]
    }
    assert api("otto").post(url(job), body, format="json").status_code == 202
    client.force_login(users["mia"])
    html = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Time in the run not spent training" in html
    # eval: twice, 6 min in all, × 32 GPUs = 3.2 GPU-hours; startup 4 min = 2.1 GPU-hours.
    rows = re.findall(
        r'<tr><td class="mono">(\w+)</td><td class="r">(\d+)</td>'
        r'<td class="r">([^<]+)</td><td class="r">([\d.]+)</td></tr>',
        html,
    )
    assert rows == [("eval", "2", "6 min", "3.2"), ("startup", "1", "4 min", "2.1")]
