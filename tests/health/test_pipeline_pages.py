"""What the pages say while KUAE's own pipeline is stale (docs/operations.md, Watching the
watcher): "Run checks now" with no worker, "Last run" as completed runs only, the
overview's data age and nodes not shown healthy on stale evidence."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from apps.common.heartbeats import heartbeats_record
from apps.health.checks import SCHEDULED_KINDS, kind_label
from apps.health.models import CheckRun
from apps.health.services import run_execute, runs_execute_now, schedules_ensure
from tests.health.test_pipeline import _done, _fresh
from tests.support import grid_tiles

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_cached_status():
    cache.clear()
    yield
    cache.clear()


NO_WORKER = "No worker is taking runs"


def test_run_now_says_no_worker_takes_runs(client, users, cluster, fleet):
    client.force_login(users["otto"])
    html = client.get("/health/?cluster=c1").content.decode()
    assert "Run all checks now" in html and NO_WORKER in html
    response = client.post("/health/run/", {"cluster": "c1", "kind": "heartbeat"}, follow=True)
    html = response.content.decode()
    assert f"{NO_WORKER}: 1 check run (Heartbeat) will wait until one starts." in html
    assert "Queued 1 check run" not in html


def test_run_now_with_a_live_worker_says_queued(client, users, cluster, fleet):
    _fresh(cluster)
    client.force_login(users["otto"])
    html = client.get("/health/?cluster=c1").content.decode()
    assert "Run all checks now" in html and NO_WORKER not in html
    html = client.post(
        "/health/run/", {"cluster": "c1", "kind": "heartbeat"}, follow=True
    ).content.decode()
    assert "Queued 1 check run: Heartbeat." in html and NO_WORKER not in html


def test_last_run_is_the_last_completed_run_not_a_queued_one(client, users, cluster, fleet):
    heartbeats_record(["beat", "worker:celery@w1"])
    runs_execute_now(cluster=cluster, kinds=["heartbeat"], requested_by="test")
    client.force_login(users["otto"])
    client.post("/health/run/", {"cluster": "c1", "kind": "heartbeat"})
    html = client.get("/health/?cluster=c1").content.decode()
    row = html.split('id="live-checks"')[1].split("</tr>")[1]
    assert "Heartbeat" in row or "heartbeat" in row.lower()
    assert "run-done" in row and "never" not in row
    # the queued run is not the last run: it is marked beside it, as what comes next
    pending = row.split("data-pending-run")[1]
    assert "run-queued" not in row.split("data-pending-run")[0] and "run-queued" in pending


def test_run_all_says_the_checks_by_their_labels(client, users, cluster, fleet):
    """Not "heartbeat, job_hang, … sdc": the names the Checks table shows (issue 42)."""
    _fresh(cluster)
    client.force_login(users["otto"])
    html = client.post("/health/run/", {"cluster": "c1"}, follow=True).content.decode()
    said = html.split("Queued ")[1].split("</p>")[0]
    assert all(str(kind_label(k)) in said for k in SCHEDULED_KINDS)
    assert "Silent data corruption" in said and "Job hang" in said
    assert not any(k in said for k in SCHEDULED_KINDS if "_" in k or k == "sdc")
    again = client.post("/health/run/", {"cluster": "c1"}, follow=True).content.decode()
    assert "Already queued, not queued again: Heartbeat, " in again


def test_checks_table_shows_the_new_runs_once_the_worker_has_run_them(
    client, users, cluster, fleet
):
    """ "Run now" answered: the kind's row marks its run Queued beside the last run; once
    the worker has run it, the row's last run is the new one (what the page's live refresh
    of #live-checks fetches) (issue 42)."""
    heartbeats_record(["beat", "worker:celery@w1"])
    runs_execute_now(cluster=cluster, kinds=["heartbeat"], requested_by="test")
    client.force_login(users["otto"])
    client.post("/health/run/", {"cluster": "c1", "kind": "heartbeat"})
    queued = CheckRun.objects.get(kind="heartbeat", status="queued")

    def heartbeat_row() -> str:
        html = client.get("/health/?cluster=c1").content.decode()
        return html.split('id="live-checks"')[1].split("</tr>")[1]

    assert f'data-pending-run="{queued.pk}"' in heartbeat_row()
    run_execute(run_id=queued.pk)
    row = heartbeat_row()
    assert "data-pending-run" not in row and "run-done" in row
    queued.refresh_from_db()
    assert queued.started_at.isoformat()[:19] in row  # its time is the new run's


def _updated_line(html: str) -> str:
    start = html.index('<span class="updated')
    return html[start : html.index("</span>", start)]


def test_overview_names_the_age_of_the_data_red_while_stale(client, users, cluster, fleet):
    # Evidence 4 min old, no worker: the line says how old the data is, in red.
    schedules_ensure()
    CheckRun.objects.all().delete()
    _done(cluster, "heartbeat", 240)
    client.force_login(users["mia"])
    line = _updated_line(client.get("/?cluster=c1").content.decode())
    assert "data from 4 min ago" in line and "data-stale" in line
    assert "updated just now" not in line


def test_overview_data_line_while_fresh(client, users, cluster, fleet):
    _fresh(cluster)
    client.force_login(users["mia"])
    line = _updated_line(client.get("/?cluster=c1").content.decode())
    assert "data from 1 s ago" in line and "data-stale" not in line


def _stale_heartbeat(cluster) -> None:  # noqa: ANN001
    """Everything fresh but the heartbeat check, last completed 10 min ago."""
    _fresh(cluster)
    CheckRun.objects.filter(kind="heartbeat").delete()
    _done(cluster, "heartbeat", 600)


def test_healthy_nodes_on_stale_heartbeat_evidence_look_unverified(client, users, cluster, fleet):
    _stale_heartbeat(cluster)
    client.force_login(users["mia"])
    html = client.get("/?cluster=c1").content.decode()
    healthy = [t for t in grid_tiles(html) if "state-healthy" in t.classes]
    assert len(healthy) == 16  # every healthy tile, in class and title
    assert all(" unverified" in t.classes for t in healthy)
    assert all(t.title.endswith(" · unverified: checks stale 10 min") for t in healthy)
    html = client.get("/nodes/?cluster=c1").content.decode()
    assert "Healthy (unverified: checks stale 10 min)" in html


def test_health_page_grid_shows_unverified_nodes_with_a_legend(client, users, cluster, fleet):
    """The Health page's grid draws healthy nodes on stale evidence as the overview does:
    hatched and outlined, the words in each tile's title and in the legend."""
    _stale_heartbeat(cluster)
    client.force_login(users["mia"])
    html = client.get("/health/?cluster=c1").content.decode()
    grid = html.split('id="live-grid"')[1].split("</section>")[0]
    tiles = [t for t in grid_tiles(grid) if "state-healthy" in t.classes]
    assert tiles and all(" unverified" in t.classes for t in tiles)
    assert all("unverified: checks stale 10 min" in t.title for t in tiles)
    legend = html.split('id="live-legend"')[1].split("</ul>")[0]
    assert "healthy, unverified: checks stale 10 min" in legend
    # the overview's legend says it too
    html = client.get("/?cluster=c1").content.decode()
    assert "healthy, unverified: checks stale 10 min" in html


def test_healthy_nodes_on_fresh_evidence_are_plainly_healthy(client, users, cluster, fleet):
    _fresh(cluster)
    client.force_login(users["mia"])
    assert "unverified" not in client.get("/?cluster=c1").content.decode()
    assert "unverified" not in client.get("/nodes/?cluster=c1").content.decode()
    assert "unverified" not in client.get("/health/?cluster=c1").content.decode()
