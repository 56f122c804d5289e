"""The bounds of docs/operations.md, Limits, written as the attacks of issue 16: each amplifier is
refused with a 400 naming its bound, before the work — nothing stored, memory flat.

- 761 bytes of Slurm body expanded to a million names (76 MB); a 139-byte incident-form
  field took a web worker to 705 MiB;
- one 155-byte Slurm request added 70,000 nodes;
- a hostname with `/` made /nodes/ and the job pages 500 for everyone;
- Prometheus intake kept 450,001 metric names on one GPU;
- one Alertmanager request queued 2,000 pages;
- nested JSON was a RecursionError (500) on the DRF-parsed endpoints;
- the weekly CSV wrote `=cmd|…` and `=HYPERLINK(…)` as live cells.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import tracemalloc
import zipfile
from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from apps.common.weeks import week_label, week_start
from apps.fleet.models import GPU, Node, NodeStateChange
from apps.fleet.services import NodeSpec, cluster_create, nodes_register
from apps.incidents.models import Delivery, Incident
from apps.incidents.services import incident_open
from apps.jobs.models import Job
from apps.jobs.services import job_create
from tests.incidents.webhooks import URL as ALERTMANAGER
from tests.incidents.webhooks import alert, webhook
from tests.reports.tables import cells as zip_cells

pytestmark = pytest.mark.django_db

MiB = 1024 * 1024
SLURM = "/api/v1/ingest/slurm/?cluster=c1"
T0 = dt.datetime(2026, 11, 23, 8, 0, 5, tzinfo=dt.UTC)


def peak(call: Callable[[], Any]) -> tuple[Any, int]:
    """What `call` answers, and the most memory Python held above its start meanwhile (after
    a first call, which loads what a first request loads)."""
    call()
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def slurm_job(job_id: int, nodes: str) -> dict[str, Any]:
    return {"job_id": job_id, "state": {"current": ["RUNNING"]}, "nodes": nodes}


def compact(body: Any) -> str:
    return json.dumps(body, separators=(",", ":"))


def counts() -> tuple[int, int, int]:
    return Node.objects.count(), GPU.objects.count(), Job.objects.count()


# --- Hostlist expansion: 20,000 names per request ------------------------------------------


def test_761_bytes_of_slurm_that_expand_to_a_million_names_are_400_and_memory_stays_flat(
    api, cluster
):
    body = compact({"jobs": [slurm_job(i, "gpu[000000-099999]") for i in range(1, 11)]})
    assert len(body) <= 761  # ten records of 100,000 names each: a million names
    before = counts()
    response, used = peak(lambda: api("ada").post(SLURM, body, content_type="application/json"))
    assert response.status_code == 400
    assert response.json() == {
        "jobs[0].nodes": ["expands past the bound on hostlist expansion: 20,000 names per request"]
    }
    assert counts() == before
    assert used < 8 * MiB, f"{used / MiB:.1f} MiB held for a refused request"


def test_the_bound_is_per_request_not_per_field(api, cluster):
    # Each field alone is under 20,000; together they are past it.
    body = {"jobs": [slurm_job(1, "a[00001-15000]"), slurm_job(2, "b[00001-15000]")]}
    before = counts()
    response = api("ada").post(SLURM, body, format="json")
    assert response.status_code == 400
    assert "20,000 names per request" in response.json()["jobs[1].nodes"][0]
    assert counts() == before


def test_one_155_byte_request_adds_no_70000_nodes(api, cluster):
    body = compact({"jobs": [slurm_job(1, "x[1-70000]")]})
    assert len(body) <= 155
    response = api("ada").post(SLURM, body, content_type="application/json")
    assert response.status_code == 400
    assert "bound on hostlist expansion" in response.json()["jobs[0].nodes"][0]
    assert Node.objects.count() == 0


def test_new_nodes_per_request_are_bounded_at_2000(api, cluster):
    # 2,001 names is well within the hostlist bound, but past the nodes one request may add.
    body = {"jobs": [slurm_job(1, "n[0001-1000]"), slurm_job(2, "n[1001-2001]")]}
    response = api("ada").post(SLURM, body, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "nodes": [
            "names 2,001 new nodes: past the bound of 2,000 new nodes per request "
            "(register them in smaller requests)"
        ]
    }
    assert counts() == (0, 0, 0)


def test_new_nodes_from_intakes_are_bounded_at_2000_per_cluster_per_hour(api, cluster):
    """Issue 32: 2,000 fake nodes a request, repeatable without limit. Within the hour a
    second request that would pass 2,000 new nodes for the cluster is refused, naming the
    bound, and stores nothing; a person registering nodes is not capped."""
    agent = api("ada")
    first = {"jobs": [slurm_job(1, "n[0001-1500]")]}
    assert agent.post(SLURM, first, format="json").status_code == 200
    second = {"jobs": [slurm_job(2, "m[0001-0501]")]}
    response = agent.post(SLURM, second, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "nodes": [
            "names 501 new nodes: past the bound of 2,000 new nodes per cluster per hour "
            "from agents' intakes (1,500 made in the last hour; a person can register more)"
        ]
    }
    assert counts() == (1500, 1500 * 8, 1)
    fits = {"jobs": [slurm_job(2, "m[0001-0500]")]}
    assert agent.post(SLURM, fits, format="json").status_code == 200
    assert Node.objects.count() == 2000
    # People are not capped: an operator registers nodes past it.
    person = api("otto").post(
        "/api/v1/nodes/", {"cluster": "c1", "hostname": "p0001"}, format="json"
    )
    assert person.status_code == 201, person.content
    # An hour later the intake may add nodes again.
    NodeStateChange.objects.update(recorded_at=timezone.now() - dt.timedelta(minutes=61))
    again = {"jobs": [slurm_job(3, "k[0001-0010]")]}
    assert agent.post(SLURM, again, format="json").status_code == 200


def test_an_intake_never_claims_another_clusters_hostname(api, cluster):
    """Issue 32: a Slurm record naming another cluster's node is a 403 naming it; nothing is
    stored and the other cluster keeps its node."""
    c2 = cluster_create(name="c2", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8)
    nodes_register(cluster=c2, specs=[NodeSpec(hostname="x000")])
    body = {"jobs": [slurm_job(1, "x000,n0001")]}
    response = api("ada").post(SLURM, body, format="json")
    assert response.status_code == 403
    assert "x000" in response.json()["detail"] and "c2" not in response.json()["detail"]
    assert Node.objects.get(hostname="x000").cluster == c2
    assert not Node.objects.filter(hostname="n0001").exists() and not Job.objects.exists()


def test_the_incident_form_refuses_a_139_byte_field_of_a_million_names(client, users, cluster):
    field = ",".join(f"{c}[000000-099999]" for c in "abcdefg")[:139]
    client.force_login(users["erin"])
    response, used = peak(
        lambda: client.post(
            "/incidents/new/",
            {
                "title": "t",
                "cluster": "c1",
                "category": "gpu",
                "severity": "sev3",
                "detected_at": "2026-11-23 08:00:00",
                "nodes": field,
            },
        )
    )
    assert response.status_code == 400
    errors = response.context["form"].errors["nodes"]
    assert errors == [
        "not a hostlist: expands past the bound on hostlist expansion: 20,000 names per request"
    ]
    assert Incident.objects.count() == 0
    assert used < 8 * MiB, f"{used / MiB:.1f} MiB held for a refused form"


# --- Hostnames are DNS names -----------------------------------------------------------

BAD_HOSTNAMES = [
    "gpu/1",
    "gpu 1",
    "-gpu1",
    "gpu1-",
    "gpu..1",
    "gpu_1",
    "a" * 64 + ".example",
    ".".join(["a" * 63] * 4)[:254],  # 254 characters of good labels
    "gpu1\x00",
    "gpü1",
]


@pytest.mark.parametrize("hostname", BAD_HOSTNAMES)
def test_post_nodes_refuses_a_hostname_that_is_not_a_dns_name(api, cluster, hostname):
    response = api("otto").post(
        "/api/v1/nodes/", {"hostname": hostname, "cluster": "c1"}, format="json"
    )
    assert response.status_code == 400 and list(response.json()) == ["hostname"]
    assert Node.objects.count() == 0


@pytest.mark.parametrize("hostname", ["gpu001", "GPU-7", "gpu001.dc1.example.com", "1", "a" * 63])
def test_post_nodes_takes_a_dns_name(api, cluster, hostname):
    response = api("otto").post(
        "/api/v1/nodes/", {"hostname": hostname, "cluster": "c1", "gpu_count": 1}, format="json"
    )
    assert response.status_code == 201, response.json()


@pytest.mark.parametrize(
    "nodes", ["gpu/[1-2]", "gpu[1-2] x", "-gpu[1-2]", "g_[1-2]", "a" * 250 + "[1-9999]"]
)
def test_slurm_registers_no_node_whose_name_is_not_a_dns_name(api, cluster, client, users, nodes):
    response = api("ada").post(SLURM, {"jobs": [slurm_job(1, nodes)]}, format="json")
    assert response.status_code == 400 and list(response.json()) == ["jobs[0].nodes"]
    assert counts() == (0, 0, 0)
    client.force_login(users["mia"])
    assert client.get("/nodes/").status_code == 200


def test_the_incident_form_names_a_bad_hostname(client, users, cluster):
    client.force_login(users["erin"])
    response = client.post(
        "/incidents/new/",
        {
            "title": "t",
            "cluster": "c1",
            "category": "gpu",
            "severity": "sev3",
            "detected_at": "2026-11-23 08:00:00",
            "nodes": "gpu/1",
        },
    )
    assert response.status_code == 400
    assert "is not a DNS name" in response.context["form"].errors["nodes"][0]


# --- Metric names per GPU: 200 ---------------------------------------------------------


def test_prometheus_text_of_450001_names_on_one_gpu_is_400_at_the_201st(api, nodes):
    text = "".join(f'm{i}{{gpu="0"}} 1\n' for i in range(450_001))
    assert len(text) < settings.KUAE_MAX_BODY_BYTES
    response = api("ada").post(
        "/api/v1/ingest/prometheus/?node=gpu000", text, content_type="text/plain"
    )
    assert response.status_code == 400
    body = response.json()
    assert "past the bound on metric names per GPU" in body["body"][0]
    assert body["line"] == ["201"]  # read no further than the bound
    assert GPU.objects.get(node__hostname="gpu000", index=0).metrics == {}


def test_prometheus_cannot_grow_a_gpus_names_across_requests(api, nodes):
    url = "/api/v1/ingest/prometheus/?node=gpu000&ts={}"
    for round_, expected in ((0, 202), (1, 400)):
        text = "".join(f'r{round_}_m{i}{{gpu="0"}} 1\n' for i in range(150))
        ts = (T0 + dt.timedelta(seconds=round_)).isoformat().replace("+00:00", "Z")
        response = api("ada").post(url.format(ts), text, content_type="text/plain")
        assert response.status_code == expected, response.json()
    assert response.json() == {
        "gpu000/0.metrics": [
            "GPU 0 of gpu000 would keep 300 metric names: past the bound of 200 metric names "
            "per GPU"
        ]
    }
    assert len(GPU.objects.get(node__hostname="gpu000", index=0).metrics) == 150


def test_telemetry_samples_of_one_gpu_cannot_add_up_past_the_bound(api, nodes):
    samples = [
        {
            "node": "gpu001",
            "gpu": 3,
            "ts": (T0 + dt.timedelta(seconds=k)).isoformat(),
            "metrics": {f"s{k}_m{i}": i for i in range(100)},
        }
        for k in range(3)
    ]
    response = api("ada").post("/api/v1/ingest/telemetry/", {"samples": samples}, format="json")
    assert response.status_code == 400
    assert "past the bound of 200 metric names per GPU" in response.json()["gpu001/3.metrics"][0]
    assert GPU.objects.get(node__hostname="gpu001", index=3).metrics == {}
    # Re-sending the names a GPU already keeps is no growth: near the bound is fine.
    samples = samples[:2]
    assert (
        api("ada")
        .post("/api/v1/ingest/telemetry/", {"samples": samples}, format="json")
        .status_code
        == 202
    )
    later = [
        {**s, "ts": (T0 + dt.timedelta(minutes=1, seconds=k)).isoformat()}
        for k, s in enumerate(samples)
    ]
    assert (
        api("ada").post("/api/v1/ingest/telemetry/", {"samples": later}, format="json").status_code
        == 202
    )
    assert len(GPU.objects.get(node__hostname="gpu001", index=3).metrics) == 200


# --- Pages per cluster per minute: 30 ----------------------------------------------------


def test_one_alertmanager_request_pages_at_most_30_times_a_minute(
    api, cluster, settings, django_capture_on_commit_callbacks
):
    settings.KUAE_NOTIFY_EMAILS, settings.KUAE_NOTIFY_WEBHOOK = ["oncall@example.com"], ""
    now = timezone.now().isoformat().replace("+00:00", "Z")
    alerts = [
        alert(f"fp{i:03d}", starts=now, alertname=f"Thing{i}", cluster="c1", severity="critical")
        for i in range(40)
    ]
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = api("ada").post(ALERTMANAGER, webhook(*alerts), format="json")
    assert response.status_code == 200 and response.json()["opened"] == 40
    assert len(queued) == 30  # thirty pages go out; the other ten are recorded, not sent
    skipped = Delivery.objects.filter(status=Delivery.Status.SKIPPED)
    assert skipped.count() == 10
    assert all(
        "the bound on pages per cluster per minute" in d.error and "c1" in d.error for d in skipped
    )


# --- JSON nesting depth: 64 ------------------------------------------------------------

JSON_ENDPOINTS = [
    ("otto", "/api/v1/nodes/"),  # DRF's parser
    ("ada", "/api/v1/jobs/"),
    ("ada", SLURM),
    ("ada", ALERTMANAGER),
    ("ada", "/api/v1/ingest/telemetry/"),  # orjson
    ("ada", "/api/v1/ingest/events/"),
    ("erin", "/api/v1/incidents/"),
]


def nested(depth: int) -> str:
    return (
        '{"a":' * (depth // 2)
        + "[" * (depth - depth // 2)
        + "]" * (depth - depth // 2)
        + ("}" * (depth // 2))
    )


@pytest.mark.parametrize(("who", "url"), JSON_ENDPOINTS)
@pytest.mark.parametrize("depth", [65, 10_000])
def test_deeply_nested_json_is_400_naming_the_bound(api, cluster, who, url, depth):
    response = api(who).post(url, nested(depth), content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {
        "detail": "JSON nested more than 64 levels deep (the bound on JSON nesting depth)"
    }


def test_json_metrics_of_a_job_are_bounded_too(api, job):
    # The job metrics endpoint parses NaN and Infinity (its own parser).
    url = f"/api/v1/jobs/{job.pk}/metrics/"
    response = api("ada").post(url, nested(10_000), content_type="application/json")
    assert response.status_code == 400 and "nesting depth" in response.json()["detail"]


@pytest.mark.parametrize(("who", "url"), JSON_ENDPOINTS)
def test_json_64_deep_is_within_the_bound(api, cluster, who, url):
    response = api(who).post(url, nested(64), content_type="application/json")
    assert response.status_code == 400  # not what any endpoint wants, but parsed
    assert "nesting depth" not in json.dumps(response.json())


def test_brackets_in_strings_do_not_count_and_cannot_hide_depth(api, cluster):
    deep_in_strings = {"hostname": "[" * 100, "cluster": "{" * 100}
    response = api("otto").post("/api/v1/nodes/", deep_in_strings, format="json")
    assert response.status_code == 400 and "hostname" in response.json()
    hidden = '["]",' * 100 + "1" + ',"["]' * 100  # strings that close what they open
    response = api("otto").post("/api/v1/nodes/", hidden, content_type="application/json")
    assert response.status_code == 400 and "nesting depth" in response.json()["detail"]


# --- The weekly CSV holds no live formula --------------------------------------------------

FORMULAS = ["=cmd|' /C calc'!A0", "+1", "-2", "@SUM(A1:A9)", "\t=1", "\r=1", '=HYPERLINK("x")']
INNER = {"ok;=1+1": "ok;'=1+1", "ok,=1+1": "ok,'=1+1"}  # issue 41: after a separator


def test_weekly_csv_writes_titles_and_job_names_as_text(client, users, cluster, nodes):
    start = week_start(timezone.now()) - dt.timedelta(weeks=1)
    for i, text in enumerate([*FORMULAS, *INNER]):
        at = start + dt.timedelta(hours=10 * i + 1)
        job, _ = job_create(
            cluster=cluster,
            nodes=nodes[:1],
            name=text,
            gpu_count=8,
            status="completed",
            started_at=at,
            ended_at=at + dt.timedelta(hours=8),
        )
        incident_open(
            cluster=cluster,
            title=text,
            category="gpu",
            severity="sev3",
            occurred_at=at + dt.timedelta(hours=1),
            detected_at=at + dt.timedelta(hours=1),
            recovered_at=at + dt.timedelta(hours=2),
            job=job,
            nodes=nodes[:1],
            interrupts_job=True,
        )
    client.force_login(users["mia"])
    export = client.get(f"/reports/weekly.zip?cluster=c1&week={week_label(start)}")
    assert export.status_code == 200
    cells = zip_cells(export.content)
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    for text in FORMULAS:
        assert cells.count("'" + text) == 2, text  # the job's name and the incident's title
    for text, written in INNER.items():
        assert cells.count(written) == 2 and text not in cells, text
    # Every cell is quoted, so a spreadsheet splitting on `;` keeps `ok;…` one cell.
    with zipfile.ZipFile(io.BytesIO(export.content)) as archive:
        for name in archive.namelist():
            text = archive.read(name).decode("utf-8")
            assert "ok;'=1+1" in text or "ok;" not in text
            quoted = io.StringIO()  # the same cells, each quoted, are the same bytes
            csv.writer(quoted, quoting=csv.QUOTE_ALL).writerows(csv.reader(io.StringIO(text)))
            assert quoted.getvalue() == text, name
