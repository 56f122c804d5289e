"""docs/incidents.md, What it cost: an incident not yet recovered keeps costing, and every surface —
the API, the incident list and page, the job page, the weekly report and its export — shows the same
downtime, rework and lost GPU-hours for it at the same instant."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from django.utils import timezone

from apps.incidents.impact import impact
from apps.incidents.models import Incident
from apps.jobs.services import checkpoints_record_bulk, job_create
from tests.reports.tables import tables

pytestmark = pytest.mark.django_db

T = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)  # a Wednesday: ISO week 2026-W48
H = dt.timedelta(hours=1)
WEEK = "2026-W48"


class Clock:
    """`timezone.now()` frozen at `at`, movable."""

    def __init__(self, at: dt.datetime) -> None:
        self.at = at


@pytest.fixture
def clock(monkeypatch) -> Clock:  # noqa: ANN001
    c = Clock(T)
    monkeypatch.setattr(timezone, "now", lambda: c.at)
    return c


@pytest.fixture
def world(clock, api, nodes):  # noqa: ANN001, ANN201
    """A 32-GPU job (checkpoint 5 h before T) hit by an incident 3 h before T, filed 10
    minutes later and still open; a 64-GPU job's incident that lasted an hour, recovered."""
    small, _ = job_create(
        cluster=nodes[0].cluster,
        nodes=nodes[:4],
        name="small",
        gpu_count=32,
        n_params=7e9,
        status="running",
        started_at=T - 48 * H,
    )
    big, _ = job_create(
        cluster=nodes[0].cluster,
        nodes=nodes[4:],
        name="big",
        gpu_count=64,
        n_params=7e9,
        status="running",
        started_at=T - 48 * H,
    )
    checkpoints_record_bulk(job=small, items=[(100, T - 5 * H, 60.0, None)])
    checkpoints_record_bulk(job=big, items=[(100, T - 31 * H, 60.0, None)])
    body = {
        "cluster": "c1",
        "category": "gpu",
        "severity": "sev1",
        "interrupts_job": True,
        "planned": False,
    }
    clock.at = T - 3 * H + dt.timedelta(minutes=10)
    open_id = (
        api("erin")
        .post(
            "/api/v1/incidents/",
            {
                **body,
                "title": "XID 79 on gpu000",
                "job": small.pk,
                "nodes": ["gpu000"],
                "occurred_at": (T - 3 * H).isoformat(),
                "detected_at": clock.at.isoformat(),
            },
            format="json",
        )
        .json()["id"]
    )
    clock.at = T - 20 * H
    closed_id = (
        api("erin")
        .post(
            "/api/v1/incidents/",
            {
                **body,
                "title": "NVLink down on gpu004",
                "job": big.pk,
                "status": "resolved",
                "occurred_at": (T - 30 * H).isoformat(),
                "detected_at": (T - 30 * H).isoformat(),
                "recovered_at": (T - 29 * H).isoformat(),
                "resolved_at": (T - 29 * H).isoformat(),
            },
            format="json",
        )
        .json()["id"]
    )
    clock.at = T
    return {"small": small, "big": big, "open": open_id, "closed": closed_id}


def expected_at(now: dt.datetime):  # noqa: ANN201
    """The open incident's cost at `now`, from the pure maths (apps.incidents.impact)."""
    return impact(
        failed_at=T - 3 * H,
        recovered_at=None,
        now=now,
        planned=False,
        job_gpus=32,
        job_started_at=T - 48 * H,
        checkpoints=[(T - 5 * H, 60.0)],
    )


def figure_in_row(html: str, pk: int) -> float:
    """The exact lost GPU-hours the page put on incident `pk`'s row (its own page has one)."""
    figures = re.findall(r'data-lost-gpu-hours="([^"]+)"', html)
    if f"#{pk}</span></h1>" in html and len(figures) == 1:
        return float(figures[0])
    for row in html.split("<tr"):
        if f'href="/incidents/{pk}/"' in row:
            found = re.search(r'data-lost-gpu-hours="([^"]+)"', row)
            if found:
                return float(found[1])
    raise AssertionError(f"no figure for incident {pk}")


def test_every_surface_shows_one_figure_at_one_instant(world, client, users, clock):
    pk, job = world["open"], world["small"]
    want = expected_at(T)
    stored = Incident.objects.get(pk=pk).lost_gpu_hours
    assert stored < want.lost_gpu_hours  # the column stopped when the incident was filed
    client.force_login(users["mia"])

    detail = client.get(f"/api/v1/incidents/{pk}/").json()
    listed = next(i for i in client.get("/api/v1/incidents/").json()["results"] if i["id"] == pk)
    weekly = client.get(f"/api/v1/reports/weekly/?cluster=c1&week={WEEK}").json()
    in_report = next(i for i in weekly["incidents"] if i["id"] == pk)
    for answer in (detail, listed, in_report):
        assert (answer["downtime_s"], answer["rework_s"]) == (want.downtime_s, want.rework_s)
        assert answer["lost_gpu_hours"] == want.lost_gpu_hours

    pages = {
        "incident list": client.get("/incidents/").content.decode(),
        "incident page": client.get(f"/incidents/{pk}/").content.decode(),
        "job page": client.get(f"/jobs/{job.pk}/incidents/").content.decode(),
        "weekly report": client.get(f"/reports/weekly/?cluster=c1&week={WEEK}").content.decode(),
    }
    assert f"/jobs/{job.pk}/incidents/" in client.get(f"/jobs/{job.pk}/").content.decode()
    for name, html in pages.items():
        assert figure_in_row(html, pk) == want.lost_gpu_hours, name
        assert "so far" in html, name  # the downtime is marked as still running
    export = tables(client.get(f"/reports/weekly.zip?cluster=c1&week={WEEK}").content)
    row = next(r for r in export["incidents"] if r["incident_id"] == str(pk))
    assert float(row["lost_gpu_hours_total"]) == want.lost_gpu_hours
    assert (row["recovered"], float(row["downtime_seconds"])) == ("false", want.downtime_s)
    assert row["generated_at_utc"] == clock.at.isoformat().replace("+00:00", "Z")


def test_an_open_incident_keeps_costing_and_sorts_by_its_cost_now(world, client, users, clock):
    pk = world["open"]
    client.force_login(users["mia"])
    before = client.get(f"/api/v1/incidents/{pk}/").json()["lost_gpu_hours"]
    clock.at = T + H
    later = client.get(f"/api/v1/incidents/{pk}/").json()
    assert later["lost_gpu_hours"] == pytest.approx(before + 32)  # 32 GPUs, one more hour
    assert later["lost_gpu_hours"] == expected_at(T + H).lost_gpu_hours
    # Stored, the open one (filed after 10 min) looked cheaper than the closed one; now it
    # costs more, and both sorts say so.
    closed = Incident.objects.get(pk=world["closed"])
    assert Incident.objects.get(pk=pk).lost_gpu_hours < closed.lost_gpu_hours < before
    api_order = [i["id"] for i in client.get("/api/v1/incidents/?sort=-cost").json()["results"]]
    assert api_order == [pk, world["closed"]]
    assert [i["id"] for i in client.get("/api/v1/incidents/?sort=cost").json()["results"]] == [
        world["closed"],
        pk,
    ]
    html = client.get("/incidents/?sort=-cost").content.decode()
    page_order = [int(x) for x in re.findall(r'<td class="r"><a href="/incidents/(\d+)/">', html)]
    assert page_order == [pk, world["closed"]]


def test_reliability_pareto_counts_open_incidents_to_now(world, client, users, clock):
    client.force_login(users["mia"])
    html = client.get("/reliability/?cluster=c1&days=30").content.decode()
    pareto = json.loads(re.search(r'id="pareto-data"[^>]*>(.*?)</script>', html, re.S)[1])
    lost = next(t for t in pareto["data"] if t["name"] == "lost GPU-hours")
    closed = Incident.objects.get(pk=world["closed"]).lost_gpu_hours
    assert lost["x"] == ["Faulty GPU"]  # the category by its label (issue 18)
    assert lost["y"][0] == pytest.approx(expected_at(T).lost_gpu_hours + closed, rel=1e-9)
