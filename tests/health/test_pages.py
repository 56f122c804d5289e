"""Health pages: the cluster page, run-now, thresholds, node evidence, job suspects."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache

from apps.fleet.services import cluster_create
from apps.health.checks import CHECKS, PLUGINS, SCHEDULED_KINDS
from apps.health.checks.base import always_monitored
from apps.health.forms import ThresholdsForm
from apps.health.models import CheckRun, Thresholds
from apps.health.services import runs_execute_now, schedules_ensure
from tests.health.conftest import backdate
from tests.support import grid_tiles

pytestmark = pytest.mark.django_db


@pytest.fixture
def checked(cluster, fleet):  # noqa: ANN001, ANN201
    backdate("h03", 600)
    runs_execute_now(cluster=cluster, kinds=["heartbeat", "thermal"], requested_by="test")
    return fleet


def test_health_page(client, users, checked, django_assert_max_num_queries):
    client.force_login(users["mia"])
    # 20: each result's kind's last judged run (one grouped read), the queued runs beside
    # the last ones, and the session's write of the cluster chosen by ?cluster=; and one
    # query for each check that can be "not monitored".
    budget = 20 + sum(spec.not_monitored is not always_monitored for spec in PLUGINS)
    with django_assert_max_num_queries(budget):
        html = client.get("/health/?cluster=c1").content.decode()
    assert "node:h03" in html and "no heartbeat" in html
    tiles = grid_tiles(html)
    assert len(tiles) == 16 and any("worst-fail" in t.classes and not t.drawn for t in tiles)
    assert "Run now" not in html  # managers read; operators run
    # The thresholds in force, by check, as a manager reads them (no inputs).
    read = html[html.index('id="thresholds"') :]
    assert "<input" not in read[: read.index("</section>")]
    assert '<th scope="rowgroup" colspan="3">Fabric (NIC ports)</th>' in read
    client.force_login(users["otto"])
    operated = client.get("/health/").content.decode()
    assert "Run now" in operated
    # An operator's form: one group per check, each holding its own plug-in's thresholds.
    form = operated[operated.index('id="thresholds"') :]
    groups = re.findall(r"<legend>(.*?)</legend>(.*?)</fieldset>", form, re.S)
    titles = [title for title, _ in groups]
    assert titles == ["Every check", *(spec.label for spec in PLUGINS)]
    assert len(titles) == len(CHECKS) + 1
    fabric = dict(groups)["Fabric (NIC ports)"]
    assert fabric.count("<input") == len(CHECKS["fabric"].thresholds)
    assert 'name="fabric_flaps_per_min"' in fabric and 'name="temp_c"' not in fabric
    # A value written as its default is: 5, not 5.0; a fraction exactly; a whole count steps by 1.
    assert re.search(r'name="fabric_flaps_per_min" value="5" step="any"', fabric)
    assert re.search(r'name="slow_factor" value="1.1" step="any"', form)
    assert re.search(r'name="fabric_warns_to_fail" value="3" step="1"', fabric)
    # Reading the page writes nothing: no thresholds row until someone saves one.
    assert "the defaults" in client.get("/health/?cluster=c1").content.decode()
    assert not Thresholds.objects.exists()


def test_run_now_and_thresholds_are_for_operators(
    client, users, checked, django_capture_on_commit_callbacks
):
    client.force_login(users["mia"])
    assert client.post("/health/run/", {"cluster": "c1", "kind": "sdc"}).status_code == 403
    client.force_login(users["otto"])
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client.post("/health/run/", {"cluster": "c1", "kind": "sdc"})
    assert response.status_code == 302 and len(queued) == 1
    assert CheckRun.objects.filter(kind="sdc", requested_by="otto", status="queued").exists()
    form = ThresholdsForm(instance=Thresholds(cluster=checked["job"].cluster)).initial
    client.post("/health/thresholds/", {**form, "cluster": "c1", "heartbeat_s": 240})
    saved = Thresholds.objects.get()
    assert saved.values == {"heartbeat_s": 240} and saved.updated_by == "otto"
    assert saved.limits.heartbeat_s == 240 and saved.limits.temp_c == 90
    client.post("/health/thresholds/", {**form, "cluster": "c1", "slow_factor": 0.5})
    assert Thresholds.objects.get().limits.slow_factor == 1.10  # refused: must be above 1


def test_node_evidence_and_job_suspects_fragments(
    client, users, checked, django_assert_max_num_queries
):
    client.force_login(users["mia"])
    with django_assert_max_num_queries(8):
        html = client.get("/health/nodes/h03/evidence/").content.decode()
    assert "1 check not passing" in html and "silent" in html
    job = checked["job"]
    with django_assert_max_num_queries(10):
        html = client.get(f"/health/jobs/{job.pk}/suspects/").content.decode()
    assert "h03" in html and "failing Heartbeat" in html and "state down" in html


def test_overview_health_line(client, users, checked):
    client.force_login(users["mia"])
    html = client.get("/health/summary/?cluster=c1").content.decode()
    assert "1 failing" in html and "last sweep" in html
    assert "/health/summary/" in client.get("/").content.decode()


def test_overview_health_line_before_any_check_says_so(client, users, cluster, fleet):
    """No check has completed on the cluster: the line says so and does not claim that
    every check passes (docs/operations.md, Watching the watcher); once a sweep passes,
    it does."""
    client.force_login(users["mia"])
    html = client.get("/health/summary/?cluster=c1").content.decode()
    assert "no check has completed yet" in html
    assert "all passing" not in html and "last sweep" not in html
    schedules_ensure()  # as beat's first tick does
    runs_execute_now(cluster=cluster, kinds=["heartbeat"], requested_by="test")
    cache.clear()  # the pipeline status is cached for 10 s
    html = client.get("/health/summary/?cluster=c1").content.decode()
    # one check passed, the others never ran: late, not "all passing"
    late = len(SCHEDULED_KINDS) - 1
    assert f"{late} checks late" in html and "all passing" not in html, html
    assert "last sweep" in html and "no check has completed yet" not in html
    runs_execute_now(cluster=cluster, kinds=list(SCHEDULED_KINDS), requested_by="test")
    cache.clear()
    html = client.get("/health/summary/?cluster=c1").content.decode()
    assert "checks late" not in html and "no check has completed yet" not in html, html


def test_run_now_and_thresholds_without_a_cluster_say_so(client, users, db):
    """No cluster at all, none chosen, or one that does not exist: a 400 naming the
    field, and nothing written (these once ended in a NOT NULL IntegrityError, a 500)."""
    client.force_login(users["otto"])
    for url in ("/health/run/", "/health/thresholds/"):
        response = client.post(url, {"kind": "heartbeat"})
        assert response.status_code == 400, url
        assert response.content.decode().startswith("cluster: this field is required")
    cluster_create(name="c1", gpu_model="H100", peak_tflops_per_gpu=989.4, gpus_per_node=8)
    for url in ("/health/run/", "/health/thresholds/"):
        # A write never falls back to the first cluster the way the page's read does.
        assert client.post(url, {"kind": "heartbeat"}).status_code == 400, url
        unknown = client.post(url, {"cluster": "c9", "kind": "heartbeat"})
        assert unknown.status_code == 400
        assert unknown.content.decode() == "cluster: no cluster is named 'c9'."
    assert not CheckRun.objects.exists() and not Thresholds.objects.exists()
    assert client.post("/health/run/", {"cluster": "c1", "kind": "heartbeat"}).status_code == 302
    assert CheckRun.objects.filter(cluster__name="c1", kind="heartbeat").count() == 1
