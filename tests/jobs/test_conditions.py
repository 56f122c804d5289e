"""docs/incidents.md, A job's condition: what a job's open incidents say of it — `condition` and
`open_incidents` on the job API, the job list and page, the overview — and a hung or interrupted
job's MFU now being 0, in the cluster's GPU-weighted MFU too. And a node's open incidents."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from apps.fleet.readers import IncidentRef
from apps.incidents.conditions import OpenIncident, job_condition
from apps.jobs.models import Job
from apps.jobs.services import job_create

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)


def _open(pk: int, job: int | None, category: str = "gpu", **kw) -> OpenIncident:
    return OpenIncident(
        ref=IncidentRef(pk, category, kw.pop("severity", "sev2"), f"#{pk}"),
        job_id=job,
        interrupts_job=kw.pop("interrupts_job", False),
        recovered=kw.pop("recovered", False),
        detected_at=kw.pop("detected_at", NOW),
    )


def test_condition_rules_are_pure():
    hang = _open(1, 7, "hang", severity="sev1", interrupts_job=True)
    xid = _open(2, 7, "gpu", interrupts_job=True)
    slow = _open(3, None, "slow_node", severity="sev3")
    other_job = _open(4, 8, "hang", interrupts_job=True)
    assert job_condition(job_id=7, incidents=[]).condition == "ok"
    assert job_condition(job_id=7, incidents=[other_job]).condition == "ok"
    named = job_condition(job_id=7, incidents=[slow, other_job], on_its_nodes=[3])
    assert named.condition == "degraded" and [r.id for r in named.open_incidents] == [3]
    stopped = job_condition(job_id=7, incidents=[xid, slow], on_its_nodes=[3])
    assert stopped.condition == "interrupted" and stopped.cause.id == 2 and stopped.stopped
    hung = job_condition(job_id=7, incidents=[slow, xid, hang], on_its_nodes=[3])
    assert hung.condition == "hung" and hung.cause.id == 1
    assert [r.id for r in hung.open_incidents] == [1, 2, 3]  # most severe first
    recovered = _open(5, 7, "hang", interrupts_job=True, recovered=True)
    after = job_condition(job_id=7, incidents=[recovered])
    assert after.condition == "degraded" and not after.stopped  # training resumed


def _job(cluster, nodes, name: str, gpus: int, mfu: float, api) -> Job:  # noqa: ANN001
    job, _ = job_create(
        cluster=cluster,
        nodes=nodes,
        name=name,
        n_params=70e9,
        gpu_count=gpus,
        status="running",
        started_at=timezone.now() - dt.timedelta(hours=6),
    )
    tps = mfu / job.mfu_factor()
    sample = {
        "ts": (timezone.now() - dt.timedelta(minutes=1)).isoformat(),
        "step": 10,
        "step_time_s": 5.0,
        "tokens_per_s": tps,
    }
    posted = api("ada").post(
        f"/api/v1/jobs/{job.pk}/metrics/", {"samples": [sample]}, format="json"
    )
    assert posted.status_code == 202, posted.json()
    job.refresh_from_db()
    return job


def _incident(api, **fields) -> int:  # noqa: ANN001
    body = {
        "cluster": "c1",
        "severity": "sev2",
        # after the jobs' last step (a minute ago): a job that stepped on since is not
        # interrupted (docs/incidents.md, A job's condition)
        "detected_at": (timezone.now() - dt.timedelta(seconds=30)).isoformat(),
        "interrupts_job": False,
        "planned": False,
        **fields,
    }
    response = api("erin").post("/api/v1/incidents/", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["id"]


@pytest.fixture
def fleet(api, cluster, nodes):  # noqa: ANN001, ANN201
    """Four running jobs: `hung` (a sev1 hang), `cut` (a NODE_FAIL-like interruption),
    `slowed` (a slow-node warning on one of its nodes) and `fine`; plus a resolved incident
    on `fine`'s node, which counts for nothing."""
    jobs = {
        "hung": _job(cluster, nodes[0:2], "hung", 16, 0.45, api),
        "cut": _job(cluster, nodes[2:4], "cut", 16, 0.40, api),
        "slowed": _job(cluster, nodes[4:6], "slowed", 16, 0.35, api),
        "fine": _job(cluster, nodes[6:8], "fine", 16, 0.50, api),
    }
    ids = {
        "hang": _incident(
            api,
            title="Job hang: hung",
            category="hang",
            severity="sev1",
            job=jobs["hung"].pk,
            interrupts_job=True,
        ),
        "cut": _incident(
            api,
            title="Slurm NODE_FAIL",
            category="node_unreachable",
            job=jobs["cut"].pk,
            nodes=["gpu002"],
            interrupts_job=True,
        ),
        "slow": _incident(api, title="Slow node gpu004", category="slow_node", nodes=["gpu004"]),
        "old": _incident(api, title="Old", category="gpu", nodes=["gpu006"], status="resolved"),
    }
    return jobs, ids


def test_job_api_says_condition_and_open_incidents(api, fleet, django_assert_max_num_queries):
    jobs, ids = fleet
    with django_assert_max_num_queries(9):  # + the GPU models MFU's peak reads: 1 query
        rows = {j["name"]: j for j in api("mia").get("/api/v1/jobs/").json()["results"]}
    assert {n: r["condition"] for n, r in rows.items()} == {
        "hung": "hung",
        "cut": "interrupted",
        "slowed": "degraded",
        "fine": "ok",
    }
    assert rows["hung"]["open_incidents"] == [
        {"id": ids["hang"], "category": "hang", "severity": "sev1", "title": "Job hang: hung"}
    ]
    assert [i["id"] for i in rows["slowed"]["open_incidents"]] == [ids["slow"]]
    assert rows["fine"]["open_incidents"] == []
    assert rows["hung"]["mfu_now"] == 0 and rows["cut"]["mfu_now"] == 0
    assert rows["fine"]["mfu_now"] == pytest.approx(0.50)
    one = api("mia").get(f"/api/v1/jobs/{jobs['cut'].pk}/").json()
    assert one["condition"] == "interrupted" and one["open_incidents"][0]["id"] == ids["cut"]


def test_job_list_queries_do_not_grow_with_incidents(api, cluster, nodes, fleet):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert api("mia").get("/api/v1/jobs/?page_size=100").status_code == 200
        return len(ctx)

    before = count()
    for i in range(6):
        job = _job(cluster, nodes[i : i + 2], f"more-{i}", 16, 0.3, api)
        _incident(api, title=f"hang {i}", category="hang", job=job.pk, interrupts_job=True)
        _incident(api, title=f"slow {i}", category="slow_node", nodes=[nodes[i].hostname])
    assert count() == before


def test_overview_counts_a_stopped_job_as_zero(client, users, fleet):
    jobs, ids = fleet
    client.force_login(users["mia"])
    html = client.get("/").content.decode()
    # GPU-weighted over the four 16-GPU jobs: hung and cut count as 0.
    expected = (0 + 0 + 0.35 + 0.50) / 4
    kpi = re.search(r"MFU now.*?</div>", html, re.S)[0]
    assert f"{100 * expected:.1f}%" in kpi
    running = html[html.index('id="jobs-h"') :]
    row = re.search(rf'href="/jobs/{jobs["hung"].pk}/">hung</a>.*?</tr>', running, re.S)[0]
    assert "Hung</span>" in row and f'href="/incidents/{ids["hang"]}/"' in row
    assert '<td class="r">0.0%</td>' in row  # its MFU now
    fine = re.search(rf'href="/jobs/{jobs["fine"].pk}/">fine</a>.*?</tr>', running, re.S)[0]
    assert "OK</span>" in fine and "50.0%" in fine


def test_job_page_says_so_at_the_top_and_links_the_incident(client, users, fleet):
    jobs, ids = fleet
    client.force_login(users["mia"])
    html = client.get(f"/jobs/{jobs['hung'].pk}/").content.decode()
    banner = re.search(r'<div class="banner cond-hung" role="alert">.*?</div>', html, re.S)
    assert banner and f'href="/incidents/{ids["hang"]}/"' in banner[0]
    assert html.index("banner cond-hung") < html.index('class="facts"')  # at the top
    assert re.search(r"<dt>MFU now</dt><dd>0\.0%", html)
    degraded = client.get(f"/jobs/{jobs['slowed'].pk}/").content.decode()
    assert "banner cond-degraded" in degraded and f'href="/incidents/{ids["slow"]}/"' in degraded
    assert "banner cond-" not in client.get(f"/jobs/{jobs['fine'].pk}/").content.decode()


def test_job_list_page_shows_condition_in_words(client, users, fleet):
    jobs, _ = fleet
    client.force_login(users["mia"])
    html = client.get("/jobs/").content.decode()
    for name, label in (("hung", "Hung"), ("cut", "Interrupted"), ("slowed", "Degraded")):
        row = re.search(rf'href="/jobs/{jobs[name].pk}/">{name}</a>.*?</tr>', html, re.S)
        assert f'class="badge cond-{label.lower()}">{label}</span>' in row[0]
    css = client.get("/ui/colours.css").content.decode()
    assert ".cond-hung{--c:#d62728;" in css  # the colour comes from the choices class


def test_node_api_lists_open_incidents_naming_it(api, fleet):
    _, ids = fleet
    body = api("mia").get("/api/v1/nodes/gpu004/").json()
    assert body["open_incidents"] == [
        {
            "id": ids["slow"],
            "category": "slow_node",
            "severity": "sev2",
            "title": "Slow node gpu004",
        }
    ]
    assert api("mia").get("/api/v1/nodes/gpu006/").json()["open_incidents"] == []  # resolved
    api("erin").patch(f"/api/v1/incidents/{ids['slow']}/", {"status": "resolved"}, format="json")
    assert api("mia").get("/api/v1/nodes/gpu004/").json()["open_incidents"] == []


def test_node_page_names_its_open_incidents(client, users, fleet):
    _, ids = fleet
    client.force_login(users["mia"])
    html = client.get("/nodes/gpu004/").content.decode()
    banner = re.search(r'<div class="banner sev-sev2" role="status">.*?</div>', html, re.S)[0]
    assert f'href="/incidents/{ids["slow"]}/"' in banner
    assert "banner sev-" not in client.get("/nodes/gpu006/").content.decode()  # resolved only
