"""docs/formulas.md, Targets: targets are floors an admin sets per cluster, 60% MFU is a reference
line and never a ceiling, a week still in progress reads "so far", and the weekly report opens on
the last complete week (page, API and export)."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from django.utils import timezone

from apps.common.weeks import week_label, week_start
from apps.fleet.services import cluster_create
from apps.jobs.services import job_create
from apps.reports.models import ClusterTargets
from tests.reports.tables import rows

pytestmark = pytest.mark.django_db

DEFAULTS = {"effective_rate": 0.99, "mtbf_hours": 360.0, "availability": 0.99, "mean_mfu": 0.5}


@pytest.fixture
def running(cluster, nodes):  # noqa: ANN001, ANN201
    """A job running for the last three weeks, so every week has figures."""
    return job_create(
        cluster=cluster,
        nodes=nodes[:2],
        name="run",
        gpu_count=16,
        n_params=7e9,
        status="running",
        started_at=timezone.now() - dt.timedelta(days=21),
    )[0]


def this_week() -> str:
    return week_label(week_start(timezone.now()))


def last_week() -> str:
    return week_label(week_start(timezone.now()) - dt.timedelta(weeks=1))


def test_defaults_are_floors_and_60_percent_is_a_reference(client, users, running):
    client.force_login(users["mia"])
    report = client.get("/api/v1/reports/weekly/?cluster=c1").json()
    assert report["targets"] == DEFAULTS and report["mfu_reference"] == 0.6
    overview = client.get("/?cluster=c1").content.decode()
    mfu = re.search(r"MFU now.*?</div>", overview, re.S)[0]
    assert "target ≥ 50%" in mfu and "best public figure 60%" in mfu
    assert "≤" not in overview and "up to 60%" not in overview
    assert "Cluster MTBF" in overview and "target ≥ 15 d" in overview
    weekly = client.get("/reports/weekly/?cluster=c1").content.decode()
    assert "target ≥ 50%" in weekly and "up to" not in weekly and "target ≥ 15 d" in weekly


def test_an_admin_sets_a_clusters_targets_and_every_surface_reads_them(
    client, users, running, cluster
):
    cluster_create(name="c2", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8)
    client.force_login(users["root"])
    form = {
        "cluster": cluster.pk,
        "effective_rate": "0.95",
        "cluster_mtbf_days": "10",
        "availability": "0.97",
        "mfu": "0.42",
    }
    bad = client.post("/admin/reports/clustertargets/add/", {**form, "effective_rate": "1.5"})
    assert bad.status_code == 200 and not ClusterTargets.objects.exists()  # 0–1, refused
    saved = client.post("/admin/reports/clustertargets/add/", form)
    assert saved.status_code == 302 and ClusterTargets.objects.get().cluster == cluster

    client.force_login(users["mia"])
    report = client.get("/api/v1/reports/weekly/?cluster=c1").json()
    assert report["targets"] == {
        "effective_rate": 0.95,
        "mtbf_hours": 240.0,
        "availability": 0.97,
        "mean_mfu": 0.42,
    }
    assert client.get("/api/v1/reports/weekly/?cluster=c2").json()["targets"] == DEFAULTS

    overview = client.get("/?cluster=c1").content.decode()
    assert "target ≥ 42%" in overview and "target ≥ 95%" in overview
    assert "target ≥ 10 d" in overview
    weekly = client.get("/reports/weekly/?cluster=c1").content.decode()
    assert "target ≥ 95%" in weekly and "target ≥ 97%" in weekly and "target ≥ 42%" in weekly
    [row] = rows(client.get("/reports/weekly.csv?cluster=c1").content.decode())
    assert row["effective_rate_target"] == "0.95" and row["gpu_availability_target"] == "0.97"
    assert row["cluster_mtbf_target_hours"] == "240.0"  # 10 days
    assert (row["mean_mfu_target"], row["mfu_best_public"]) == ("0.42", "0.6")
    reliability = client.get("/reliability/?cluster=c1").content.decode()
    assert "target ≥ 10 d" in reliability

    fig = client.get("/charts/reports/mfu.json?cluster=c1").json()
    lines = {s["label"]["text"]: s["y0"] for s in fig["layout"]["shapes"]}
    assert lines == {"target ≥ 42%": 0.42, "best public figure 60%": 0.6}
    job_fig = client.get(f"/charts/jobs/{running.pk}/progress.json").json()
    assert {s["label"]["text"] for s in job_fig["layout"]["shapes"] if "label" in s} == set(lines)
    availability = client.get("/charts/reports/availability.json?cluster=c1").json()
    assert availability["layout"]["shapes"][0]["y0"] == 0.97


def test_the_report_opens_on_the_last_complete_week(client, users, running):
    client.force_login(users["mia"])
    api = client.get("/api/v1/reports/weekly/?cluster=c1").json()
    assert api["week"] == last_week() and api["complete"] is True
    page = client.get("/reports/weekly/?cluster=c1").content.decode()
    assert re.search(r"<h1>.*?</h1>", page, re.S)[0].endswith(f"· {last_week()}</h1>")
    assert "so far" not in page.split('class="kpis"')[1].split("</section>")[0]
    export = client.get("/reports/weekly.csv?cluster=c1")
    assert f"{last_week()}.csv" in export["Content-Disposition"]
    pdf = client.get("/reports/weekly.pdf?cluster=c1")
    assert f"{last_week()}.pdf" in pdf["Content-Disposition"]


def test_a_week_in_progress_reads_so_far(client, users, running):
    client.force_login(users["mia"])
    api = client.get(f"/api/v1/reports/weekly/?cluster=c1&week={this_week()}").json()
    assert api["complete"] is False and api["effective_rate"] is not None
    page = client.get(f"/reports/weekly/?cluster=c1&week={this_week()}").content.decode()
    assert "(so far)" in re.search(r"<h1>.*?</h1>", page, re.S)[0]
    for label in ("Effective training rate", "Cluster MTBF", "GPU availability"):
        assert re.search(label + r' <span class="muted">so far</span>', page), label
    [row] = rows(client.get(f"/reports/weekly.csv?cluster=c1&week={this_week()}").text)
    assert (row["week"], row["complete"]) == (this_week(), "false")
    assert row["figures_until_utc"] < row["week_end_utc"]  # so far: ISO UTC times sort
    chart = client.get("/charts/reports/effective.json?cluster=c1&days=21").json()
    weeks = chart["data"][-1]["x"]
    assert weeks[-1] == f"{this_week()} (so far)" and not any("so far" in w for w in weeks[:-1])
    job_panel = client.get(f"/charts/jobs/{running.pk}/effective/").content.decode()
    assert "This week so far" in job_panel
    reliability = client.get("/reliability/?cluster=c1").content.decode()
    trend = json.loads(re.search(r'id="trend-data"[^>]*>(.*?)</script>', reliability, re.S)[1])
    assert trend["data"][0]["x"][-1] == f"{this_week()} (so far)"
