"""NODE_FAIL records in bulk (docs/integrations.md, 4. Slurm): the records
of one request that name the same node open one `node_unreachable` incident for it, one
request opens at most 200 incidents, and the rest are counted in the answer."""

from __future__ import annotations

import pytest

from apps.common.limits import SLURM_INCIDENTS
from apps.incidents.models import Incident
from apps.jobs.models import Job
from apps.scheduler.services import slurm_ingest

URL = "/api/v1/ingest/slurm/?cluster=c1"
START = 1_796_000_000


def node_fail(job_id: int, nodes: str, failed: str, *, at: int = 0) -> dict:
    """A small sacct record of a job that ended NODE_FAIL (`at` seconds after START)."""
    return {
        "job_id": job_id,
        "name": f"train-{job_id}",
        "nodes": nodes,
        "failed_node": failed,
        "state": {"current": ["NODE_FAIL"]},
        "restart_cnt": 0,
        "time": {
            "submission": START + at,
            "start": START + at + 10,
            "end": START + at + 600,
        },
    }


@pytest.mark.django_db
def test_node_fail_records_fold_into_one_incident_per_node(api, cluster):
    """The red team's 5,000 NODE_FAIL records over three nodes opened 5,000 sev2 incidents;
    now three, the others counted as folded, and the same answer again opens nothing."""
    hosts = ["r007n01", "r007n02", "r007n03"]
    body = {
        "jobs": [node_fail(100_000 + i, "r007n[01-03]", hosts[i % 3], at=i) for i in range(5_000)]
    }
    client = api("ada")
    answer = client.post(URL, body, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json() == {
        "created": 5_000,
        "updated": 0,
        "incidents": 3,
        "folded": 4_997,
        "skipped": 0,
    }
    incidents = list(Incident.objects.order_by("occurred_at"))
    assert [list(i.nodes.values_list("hostname", flat=True)) for i in incidents] == [
        [h] for h in hosts
    ]
    first = incidents[0]
    assert first.category == "node_unreachable" and first.severity == "sev2"
    assert first.interrupts_job and first.job.external_id == "100000"
    assert "1,667 job attempts" in first.title and "r007n01" in first.title
    assert "100003" in first.description
    again = client.post(URL, body, format="json").json()
    assert again["incidents"] == again["folded"] == again["skipped"] == 0
    assert Incident.objects.count() == 3 and Job.objects.count() == 5_000


@pytest.mark.django_db
def test_one_request_opens_at_most_200_incidents(cluster):
    """Records naming 250 different nodes: 200 incidents, the other 50 records skipped
    (counted, their jobs stored); they open nothing when sent again."""
    body = {"jobs": [node_fail(i + 1, f"n{i:04d}", f"n{i:04d}", at=i) for i in range(250)]}
    assert slurm_ingest(cluster_name="c1", payload=body) == {
        "created": 250,
        "updated": 0,
        "incidents": SLURM_INCIDENTS,
        "folded": 0,
        "skipped": 250 - SLURM_INCIDENTS,
    }
    assert Incident.objects.count() == SLURM_INCIDENTS == 200
    # The first failures opened theirs.
    assert set(Incident.objects.values_list("job__external_id", flat=True)) == {
        str(i + 1) for i in range(200)
    }
    assert Job.objects.filter(status="failed").count() == 250
    assert slurm_ingest(cluster_name="c1", payload=body)["incidents"] == 0


@pytest.mark.django_db
def test_records_sharing_a_node_are_one_incident(cluster):
    """Without `failed_node` a record blames its job's nodes: records whose nodes overlap
    are one incident naming all of them; a record on other nodes is its own."""
    records = [
        node_fail(1, "a[1-2]", "", at=0),
        node_fail(2, "a[2-3]", "", at=5),
        node_fail(3, "b1", "", at=9),
    ]
    answer = slurm_ingest(cluster_name="c1", payload={"jobs": records})
    assert (answer["incidents"], answer["folded"]) == (2, 1)
    shared, alone = Incident.objects.order_by("occurred_at")
    assert sorted(shared.nodes.values_list("hostname", flat=True)) == ["a1", "a2", "a3"]
    assert shared.job.external_id == "1"
    assert list(alone.nodes.values_list("hostname", flat=True)) == ["b1"]
