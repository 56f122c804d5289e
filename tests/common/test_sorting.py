"""One ordering per list, declared in its filterset: a page and its API sort by the same
`?sort=` keys (the incidents API also reads `?order=`, its former name)."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from apps.fleet.filters import NodeFilter
from apps.fleet.models import Node
from apps.incidents.filters import IncidentFilter, UnroutedAlertFilter
from apps.incidents.models import UnroutedAlert
from apps.jobs.filters import JobFilter
from apps.jobs.services import job_create

pytestmark = pytest.mark.django_db


def ids(html: str, pattern: str) -> list[str]:
    """The distinct matches of `pattern` in the page, in order."""
    return list(dict.fromkeys(re.findall(pattern, html)))


def keys(filterset: type) -> list[str]:
    """Every key the filterset's `sort` accepts, ascending and descending."""
    return [value for value, _ in filterset.base_filters["sort"].field.choices]


@pytest.fixture
def lists(api, cluster, nodes) -> None:  # noqa: ANN001
    now = timezone.now()
    for i, node in enumerate(nodes):
        node.last_seen_at = now - dt.timedelta(minutes=(i * 5) % 7)
        node.state = ("healthy", "drained", "suspect", "down")[i % 4]
    Node.objects.bulk_update(nodes, ["last_seen_at", "state"])
    for i, gpus in enumerate((64, 8, 32)):
        job_create(
            cluster=cluster,
            nodes=nodes[i : i + 2],
            name=f"job-{'bca'[i]}",
            n_params=7e9,
            gpu_count=gpus,
            status="running",
            started_at=now - dt.timedelta(hours=i + 1),
        )
    for i, severity in enumerate(("sev3", "sev1", "sev2")):
        created = api("erin").post(
            "/api/v1/incidents/",
            {
                "cluster": "c1",
                "title": f"incident {i}",
                "category": "gpu",
                "severity": severity,
                "detected_at": (now - dt.timedelta(hours=3 - i)).isoformat(),
                "interrupts_job": False,
                "planned": False,
            },
            format="json",
        )
        assert created.status_code == 201, created.json()
    for i, deliveries in enumerate((3, 9, 1)):
        UnroutedAlert.objects.create(
            fingerprint=f"fp-{i}",
            labels={"alertname": f"Stray{i}"},
            status="firing",
            starts_at=now - dt.timedelta(hours=i),
            received_at=now - dt.timedelta(minutes=10 * ((i + 1) % 3)),
            first_received_at=now - dt.timedelta(hours=i),
            deliveries=deliveries,
            reason="no known node",
        )


LISTS = [
    # filterset, page, API, how a row names itself on the page, and in the API's answer
    (NodeFilter, "/nodes/", "/api/v1/nodes/", r'href="/nodes/(gpu\d+)/"', "hostname"),
    (JobFilter, "/jobs/", "/api/v1/jobs/", r'href="/jobs/(\d+)/"', "id"),
    (IncidentFilter, "/incidents/", "/api/v1/incidents/", r'href="/incidents/(\d+)/"', "id"),
    (
        UnroutedAlertFilter,
        "/alerts/unrouted/",
        "/api/v1/alerts/unrouted/",
        r'<div class="mono small muted">(fp-\d+)</div>',
        "fingerprint",
    ),
]


@pytest.mark.parametrize(("filterset", "page", "endpoint", "row", "name"), LISTS)
def test_page_and_api_sort_alike_by_every_declared_key(
    client, users, api, lists, filterset, page, endpoint, row, name
):
    client.force_login(users["mia"])
    for key in keys(filterset):
        html = client.get(f"{page}?sort={key}").content.decode()
        answer = api("mia").get(f"{endpoint}?sort={key}")
        assert answer.status_code == 200, (key, answer.json())
        assert ids(html, row) == [str(r[name]) for r in answer.json()["results"]], key
    default = client.get(page).content.decode()
    assert ids(default, row) == [str(r[name]) for r in api("mia").get(endpoint).json()["results"]]


def test_a_sort_changes_the_order_and_marks_its_heading(client, users, api, lists):
    client.force_login(users["mia"])
    by_gpus = [j["gpu_count"] for j in api("mia").get("/api/v1/jobs/?sort=-gpus").json()["results"]]
    assert by_gpus == [64, 32, 8]
    html = client.get("/jobs/?sort=-gpus&status=running").content.decode()
    assert re.search(r"GPUs ▼</a>", html) and "?status=running&amp;sort=gpus" in html
    deliveries = api("mia").get("/api/v1/alerts/unrouted/?sort=-deliveries").json()["results"]
    assert [a["deliveries"] for a in deliveries] == [9, 3, 1]


def test_order_is_still_read_as_sort_on_the_incidents_api(api, lists):
    def order(query: str) -> list[int]:
        return [i["id"] for i in api("mia").get(f"/api/v1/incidents/?{query}").json()["results"]]

    assert order("order=severity") == order("sort=severity") != order("sort=-severity")
    assert order("order=-detected") == order("sort=-detected")


def test_an_unknown_key_is_the_default_on_a_page_and_a_400_on_the_api(client, users, api, lists):
    client.force_login(users["mia"])
    html = client.get("/nodes/?sort=bogus").content.decode()
    assert ids(html, r'href="/nodes/(gpu\d+)/"') == [f"gpu{i:03d}" for i in range(8)]
    assert "Host ▲" in html  # the default's heading is marked
    refused = api("mia").get("/api/v1/nodes/?sort=bogus")
    assert refused.status_code == 400 and "sort" in refused.json()
