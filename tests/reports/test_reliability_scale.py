"""The reliability page sums its nodes' time in service in the database (issue 46): three
times the nodes cost it no query more, and the sums are the node-by-node reckoning's."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.common.weeks import WEEK, week_start
from apps.fleet.models import Cluster, Node
from apps.fleet.services import NodeSpec, nodes_register
from apps.incidents.services import incident_open
from apps.reports.reliability import in_service_of, reliability
from apps.reports.selectors import nodes_in_service, reliability_report, weekly_reliability

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=654_321)


def _nodes(cluster: Cluster, k: int, n: int = 12) -> list[Node]:
    """`n` nodes of batch `k` put in service at times spread over the last 70 days (some
    before every window, some inside one, one tomorrow), to the microsecond."""
    ago = [dt.timedelta(days=70 - 6 * i, seconds=3.5 * i, microseconds=17 * i) for i in range(n)]
    specs = [
        NodeSpec(hostname=f"b{k}-{i:02d}", rack=f"r{k}", in_service_at=NOW - a)
        for i, a in enumerate(ago[:-1])
    ]
    specs.append(NodeSpec(hostname=f"b{k}-late", rack=f"r{k}", in_service_at=NOW + WEEK / 7))
    return nodes_register(cluster=cluster, specs=specs)


def _failures(cluster: Cluster, nodes: list[Node]) -> None:
    for days, node in ((3, nodes[0]), (12, nodes[1]), (20, None)):
        at = NOW - dt.timedelta(days=days)
        incident_open(
            cluster=cluster,
            title="x",
            category="gpu",
            severity="sev2",
            occurred_at=at,
            detected_at=at + dt.timedelta(minutes=3),
            recovered_at=at + dt.timedelta(minutes=40),
            nodes=[node] if node else [],
            interrupts_job=True,
        )


def _page_queries(client) -> int:  # noqa: ANN001
    """The page's queries; none reads the nodes' times in service one row a node."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/reliability/?cluster=c1")
    assert response.status_code == 200
    assert "failures / 1,000 node-days" in response.content.decode()
    per_node = [
        q["sql"]
        for q in queries.captured_queries
        if '"in_service_at"' in q["sql"] and "GROUP BY" not in q["sql"] and "MIN(" not in q["sql"]
    ]
    assert per_node == []
    return len(queries.captured_queries)


def test_three_times_the_nodes_cost_the_page_no_query_more(cluster, client, users):
    client.force_login(users["mia"])
    _failures(cluster, _nodes(cluster, 0))
    client.get("/reliability/?cluster=c1")  # warm whatever the page caches
    small = _page_queries(client)
    _nodes(cluster, 1)
    _nodes(cluster, 2)
    assert _page_queries(client) == small


@pytest.mark.parametrize("shift", [dt.timedelta(0), dt.timedelta(days=-40), dt.timedelta(days=9)])
def test_the_sums_are_the_node_by_node_reckoning(cluster, shift):
    """The report's and every week's figures, as `reliability` computes them over each node's
    `in_service_at`, at now, at a now before most nodes came in, and at a later one."""
    nodes = _nodes(cluster, 0) + _nodes(cluster, 1, n=5)
    _failures(cluster, nodes)
    now = NOW + shift
    times = list(Node.objects.values_list("in_service_at", flat=True))
    start = now - dt.timedelta(days=30)
    report = reliability_report(cluster=cluster, start=start, end=now, now=now, job_nodes=128)
    assert report["node_days"] > 0
    by_node = reliability(
        start=start,
        end=now,
        now=now,
        incidents=[],
        in_service=times,
    )
    assert report["node_days"] == pytest.approx(by_node["node_days"], rel=1e-12)
    assert report["hours"] == by_node["hours"]
    weeks = weekly_reliability(cluster=cluster, weeks=8, now=now)
    first = week_start(now) - 7 * WEEK
    for k, week in enumerate(weeks):
        w0 = first + k * WEEK
        alone = reliability(start=w0, end=w0 + WEEK, now=now, incidents=[], in_service=times)
        assert week["node_days"] == pytest.approx(alone["node_days"], rel=1e-12), week["week"]
        assert week["hours"] == alone["hours"]
    windows = [(start, now), (now, now + WEEK), (now - WEEK, now + WEEK)]
    summed = nodes_in_service(cluster, windows, now)
    reckoned = in_service_of(times, windows, now)
    assert summed.earliest == reckoned.earliest
    assert summed.node_seconds.keys() == reckoned.node_seconds.keys()
    for window, seconds in reckoned.node_seconds.items():
        assert summed.node_seconds[window] == pytest.approx(seconds, rel=1e-12, abs=1e-6)
