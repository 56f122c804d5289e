"""Server-rendered pages over a simulated cluster: content, query-count guards."""

from __future__ import annotations

import re

import pytest

from apps.fleet.models import Node
from apps.jobs.models import Job
from tests.support import grid_tiles, simulate

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def simulated(module_rows) -> None:  # noqa: ANN001
    """The simulated cluster, written once for the module (tests/conftest.py)."""
    module_rows(simulate, gpus=512, days=5, seed=3)


@pytest.fixture
def sim(db, simulated) -> None:  # noqa: ANN001
    """Each test reads it inside its own transaction."""


@pytest.fixture
def browser(client, users):  # noqa: ANN001
    client.force_login(users["mia"])
    return client


@pytest.mark.embedded
def test_overview_shows_kpis_grid_jobs(browser, sim, django_assert_max_num_queries):
    from apps.reports.tasks import refresh_snapshots

    refresh_snapshots()  # as beat does every minute
    # 20 (one of them the running jobs' GPU models, for their peaks), and the pipeline
    # banner's status: 2 reads here, where no check is scheduled (1 where one is), and the
    # cluster's GPU models, one grouped query (a card only where there are several)
    with django_assert_max_num_queries(23):
        response = browser.get("/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<nav" in html and "<main" in html
    tiles = grid_tiles(html)
    in_order = Node.objects.order_by("rack", "hostname").values_list("hostname", flat=True)
    assert [t.host for t in tiles] == list(in_order)  # every node once, rack by rack
    assert len(tiles) == 64 and all(t.href == f"/nodes/{t.host}/" for t in tiles)
    flagship = Job.objects.get(external_id="sim-0")
    assert flagship.name in html and "GPUs allocated" in html and "MFU now" in html


def test_overview_panel_fragment_for_polling(browser, sim):
    html = browser.get("/?cluster=kuae-sim&panel=1").content.decode()
    assert "<html" not in html and 'class="kpis"' in html


def test_overview_without_cluster_says_how_to_start(browser):
    assert b"No cluster yet" in browser.get("/").content


def test_nodes_page_filters_sorts_and_counts_queries(browser, sim, django_assert_max_num_queries):
    Node.objects.filter(hostname="r001n03").update(state="drained", state_reason="xid 79")
    with django_assert_max_num_queries(12):
        html = browser.get("/nodes/?state=drained").content.decode()
    assert "r001n03" in html and "xid 79" in html and "r000n00" not in html
    by_rack = browser.get("/nodes/?rack=r002&sort=-hostname").content.decode()
    hosts = re.findall(r'href="/nodes/(r\d+n\d+)/"', by_rack)
    assert hosts == sorted(hosts, reverse=True) and all(h.startswith("r002") for h in hosts)


def test_node_page_shows_gpus_and_history(browser, sim, django_assert_max_num_queries):
    browser.get("/nodes/r000n00/")  # the first read also files the simulated drains' repairs
    # Steady state: the page's own reads, plus Slurm actuations, the pause banner, a window
    # in progress, the repair (its three-query check for new drains) and the Host card's
    # readings; none per row.
    with django_assert_max_num_queries(19):
        response = browser.get("/nodes/r000n00/")
    html = response.content.decode()
    assert response.status_code == 200 and "State history" in html and "HBM temp" in html
    assert browser.get("/nodes/nope/").status_code == 404


def test_jobs_list_and_job_page(browser, sim, django_assert_max_num_queries):
    with django_assert_max_num_queries(12):
        listing = browser.get("/jobs/?status=running").content.decode()
    flagship = Job.objects.get(external_id="sim-0")
    assert flagship.name in listing
    with django_assert_max_num_queries(16):  # + the phases' totals (no phases: no list)
        page = browser.get(f"/jobs/{flagship.pk}/").content.decode()
    assert "data-figure" in page and "vendor/plotly" in page


def test_job_chart_is_downsampled_plotly_json(browser, sim, django_assert_max_num_queries):
    flagship = Job.objects.get(external_id="sim-0")
    # 9: the cluster's targets are their own query now that the jobs app (which serves the
    # chart) reads them through the reports app's lent reader instead of joining its table.
    with django_assert_max_num_queries(10):  # + the GPU models MFU's peak reads
        fig = browser.get(f"/charts/jobs/{flagship.pk}/progress.json").json()
    lines = [t for t in fig["data"] if t["mode"] == "lines"]
    assert [t["name"] for t in lines] == ["mfu", "tokens_per_s", "loss"]
    assert all(0 < len(t["x"]) <= 2000 for t in lines)
    assert 0.3 < sorted(lines[0]["y"])[len(lines[0]["y"]) // 2] < 0.6  # median MFU in 30–60%
    assert fig["config"]["displaylogo"] is False


def test_colour_stylesheet_comes_from_the_choices(client):
    css = client.get("/ui/colours.css").content.decode()
    assert ".state-healthy{--c:#2e9e4f;" in css and ".sev-sev1{--c:#d62728;" in css


def test_node_telemetry_chart_and_events(browser, sim, django_assert_max_num_queries):
    from apps.telemetry.models import TelemetryEvent

    node = Node.objects.get(hostname="r000n02")
    TelemetryEvent.objects.create(
        node=node, gpu=3, at=node.in_service_at, kind="xid", value=79, previous=0
    )
    with django_assert_max_num_queries(6):
        fig = browser.get("/charts/nodes/r000n02/telemetry.json").json()
    means = [t for t in fig["data"] if t.get("name")]
    assert [t["name"] for t in means] == ["GPU temp (°C)", "GPU util (%)", "Power per GPU (W)"]
    assert 20 <= len(means[0]["x"]) <= 30  # two hours of 5-minute rollups from the simulator
    assert all(30 < v < 90 for v in means[0]["y"])
    html = browser.get("/nodes/r000n02/").content.decode()
    assert "XID error" in html and "chart-node-gpus" not in html and "gpus.json" in html


def test_reliability_page(browser, sim, django_assert_max_num_queries):
    with django_assert_max_num_queries(20):
        html = browser.get("/reliability/?days=30").content.decode()
    assert "Cluster MTBF" in html and "Node MTBF" in html and "Projected job MTTF" in html
    assert 'id="trend-data"' in html and 'id="pareto-data"' in html and "Lemon nodes" in html
