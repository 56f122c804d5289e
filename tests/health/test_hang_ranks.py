"""`job_hang` with the ranks' stall reports (docs/checks.md, Ranks): the incident names the
culprits' nodes and is localised when it first does, its timeline gives the verdict's
sentence, a stall shorter than the window opens nothing, and a hang without a minority
names no node without evidence. Reports go in through the real API; the check is the real
run, at chosen times."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Cluster, Node, NodeStateChange
from apps.fleet.services import node_set_state
from apps.health.models import CheckResult
from apps.health.services import run_execute, runs_request
from apps.incidents.models import Incident
from apps.incidents.services import incident_update
from apps.jobs.models import Job

pytestmark = pytest.mark.django_db

WAIT = [
    {"file": "/train.py", "function": "main", "line": 50},
    {
        "file": "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",
        "function": "all_reduce",
        "line": 2501,
    },
]
LOADER = [
    {"file": "/train.py", "function": "main", "line": 44},
    {"file": "/train.py", "function": "load_batch", "line": 20},
]


@pytest.fixture
def stalled(api, job: Job):  # noqa: ANN001, ANN201
    """Eight ranks, two per node of the job, stopped at step 99 a little over a minute ago;
    `report(ranks, stack)` posts their stall reports."""
    agent = api("ada")
    hosts = sorted(job.nodes.values_list("hostname", flat=True))
    now = timezone.now()
    started = (now - dt.timedelta(hours=1)).isoformat()
    body = {
        "ranks": [
            {"rank": r, "world_size": 8, "node": hosts[r // 2], "started_at": started}
            for r in range(8)
        ]
    }
    assert agent.post(f"/api/v1/jobs/{job.pk}/ranks/", body, format="json").status_code == 202
    Job.objects.filter(pk=job.pk).update(
        progress_at=now - dt.timedelta(seconds=62), progress_step=99, last_step_time_s=1.0
    )

    def report(ranks: range | list[int], stack=WAIT, collective=True, step=99):  # noqa: ANN001, ANN202
        reports = [
            {
                "job": job.pk,
                "node": hosts[r // 2],
                "ts": now.isoformat(),
                "rank": r,
                "last_step": step,
                "stalled_s": 61.0,
                "stack": stack,
                "in_collective": collective,
            }
            for r in ranks
        ]
        response = agent.post("/api/v1/ingest/stalls/", {"reports": reports}, format="json")
        assert response.status_code == 202, response.content

    report.hosts = hosts  # type: ignore[attr-defined]
    report.now = now  # type: ignore[attr-defined]
    return report


def _run(job: Job, at: dt.datetime) -> Incident | None:
    run = runs_request(cluster=job.cluster, kinds=["job_hang"], requested_by="t")[0]
    run_execute(run_id=run.pk, now=at)
    return Incident.objects.filter(job=job, category="hang").first()


def test_a_culprit_outside_the_collective_is_named_and_localised(stalled, job):
    stalled(range(7))
    stalled([7], stack=LOADER, collective=False)
    early = stalled.now + dt.timedelta(seconds=5)
    assert _run(job, early) is None  # half the ranks stalled, not for the window yet
    late = stalled.now + dt.timedelta(seconds=65)
    incident = _run(job, late)
    assert incident is not None and incident.severity == "sev1" and incident.interrupts_job
    assert [n.hostname for n in incident.nodes.all()] == [stalled.hosts[3]]
    assert incident.localized_at == late
    said = "\n".join(incident.timeline.values_list("text", flat=True))
    assert f"rank 7 on {stalled.hosts[3]}" in said and "load_batch" in said
    # the next run keeps it: no second incident, no second localisation
    assert _run(job, late + dt.timedelta(seconds=60)).pk == incident.pk
    assert Incident.objects.filter(job=job).count() == 1
    assert Incident.objects.get(pk=incident.pk).localized_at == late


def test_no_minority_names_no_node_without_evidence(stalled, job):
    stalled(range(8))
    incident = _run(job, stalled.now + dt.timedelta(seconds=65))
    assert incident is not None
    assert list(incident.nodes.all()) == [] and incident.localized_at is None
    assert not Node.objects.exclude(state="healthy").exists()  # nobody blamed, nobody moved
    said = "\n".join(incident.timeline.values_list("text", flat=True)) + incident.description
    assert "no minority" in said and "none is named" in said


def test_fewer_than_half_stalled_is_not_judged(stalled, job):
    stalled(range(3))
    assert _run(job, stalled.now + dt.timedelta(seconds=65)) is None


def _blamed(stalled, job) -> tuple[Incident, Node, dt.datetime]:  # noqa: ANN001
    """Rank 7 (on the job's fourth node) in its data loader, the rest in `all_reduce`:
    the hang's incident, the culprit's node and the run's time."""
    stalled(range(7))
    stalled([7], stack=LOADER, collective=False)
    late = stalled.now + dt.timedelta(seconds=65)
    incident = _run(job, late)
    assert incident is not None
    return incident, Node.objects.get(hostname=stalled.hosts[3]), late


def test_the_culprits_node_becomes_suspect_with_the_verdict_as_its_reason(stalled, job):
    """docs/checks.md, Ranks: which rank, which node — each culprit's node becomes
    `suspect`, the verdict its reason, through the fleet's state change (history, source
    `check`); the other nodes stay as they are."""
    incident, node, late = _blamed(stalled, job)
    assert node.state == "suspect" and node.state_changed_at == late
    change = NodeStateChange.objects.filter(node=node).order_by("-at", "-id").first()
    assert change is not None and change.state == "suspect" and change.source == "check"
    assert change.by == "check:job_hang"
    assert f"rank 7 on {node.hostname}" in change.reason and "load_batch" in change.reason
    assert node.state_reason == change.reason
    others = Node.objects.filter(hostname__in=stalled.hosts[:3])
    assert set(others.values_list("state", flat=True)) == {"healthy"}
    # the next run, still hung, writes no second change
    _run(job, late + dt.timedelta(seconds=60))
    assert NodeStateChange.objects.filter(node=node, state="suspect").count() == 1


@pytest.mark.parametrize("held", ["paused", "maintenance", "drained"])
def test_the_culprits_node_is_left_as_it_is_where_a_check_may_not_move_it(stalled, job, held):
    """Automation paused, a node in maintenance or already worse than
    suspect: the incident still names the node, its state stays."""
    host = stalled.hosts[3]
    if held == "paused":
        Cluster.objects.filter(pk=job.cluster_id).update(automation_paused=True)
    else:
        node_set_state(node=Node.objects.get(hostname=host), state=held, reason="by hand")
    incident, node, _ = _blamed(stalled, job)
    assert [n.hostname for n in incident.nodes.all()] == [host]
    assert node.state == ("healthy" if held == "paused" else held)
    assert not NodeStateChange.objects.filter(node=node, state="suspect").exists()


def test_the_culprits_checks_card_names_the_incident_that_blames_it(
    stalled, job, client, users, django_assert_max_num_queries
):
    """Its own checks pass, but its Checks card does not say "every check passes" while an
    open incident's verdict blames it; it names the incident and the verdict."""
    incident, node, late = _blamed(stalled, job)
    CheckResult.objects.create(
        cluster=job.cluster,
        kind="thermal",
        target=f"node:{node.hostname}",
        node=node,
        status="pass",
        at=late,
        since=late,
    )
    client.force_login(users["mia"])
    url = f"/health/nodes/{node.hostname}/evidence/"
    with django_assert_max_num_queries(8):
        html = client.get(url).content.decode()
    assert "every check passes" not in html
    assert f"#{incident.pk}" in html and "Blamed" in html
    assert f"rank 7 on {node.hostname}" in html and "<code>load_batch</code>" in html
    # a bystander's card is unchanged
    bystander = stalled.hosts[0]
    CheckResult.objects.create(
        cluster=job.cluster,
        kind="thermal",
        target=f"node:{bystander}",
        node=Node.objects.get(hostname=bystander),
        status="pass",
        at=late,
        since=late,
    )
    assert (
        "every check passes" in client.get(f"/health/nodes/{bystander}/evidence/").content.decode()
    )
    # resolved: nothing blames it any more
    incident_update(
        incident=incident, changes={"status": "resolved", "resolved_at": late}, actor="t"
    )
    html = client.get(url).content.decode()
    assert "Blamed" not in html and "every check passes" in html
