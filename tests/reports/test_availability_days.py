"""The weekly report's availability from day sums kept by beat (issue 46): the same figures
as the node-by-node reckoning over the raw history, before and after beat summed the days, a
back-filled change or a moved `in_service_at` read from the history until summed again, and
three times the nodes cost the page no query more."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.common.weeks import WEEK, week_label, week_start
from apps.fleet.models import Cluster, Node
from apps.fleet.services import NodeSpec, node_set_state, nodes_register
from apps.reports.availability import availability
from apps.reports.availability_days import seal_days, window_availability
from apps.reports.inputs import node_histories
from apps.reports.models import AvailabilityDay, NodeDayDown
from apps.reports.tasks import seal_availability_days
from apps.reports.weekly import weekly_report
from kuaeweb.schedule import beat_schedule

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=654_321)
THIS = week_start(NOW)
LAST = THIS - WEEK
H = dt.timedelta(hours=1)
D = dt.timedelta(days=1)


def _history(cluster: Cluster, k: int) -> list[Node]:
    """Batch `k`: nodes whose changes cross midnights and both edges of last week, one that
    came into service inside it, one down now, one never changed, one not in service yet."""
    old = NOW - 40 * D
    mid = LAST + 2 * D + dt.timedelta(hours=13, minutes=17, seconds=5, microseconds=123_456)
    specs = [NodeSpec(hostname=f"b{k}-{i}", rack=f"r{k}", in_service_at=old) for i in range(5)]
    specs.append(NodeSpec(hostname=f"b{k}-mid", rack=f"r{k}", in_service_at=mid))
    specs.append(NodeSpec(hostname=f"b{k}-late", rack=f"r{k}", in_service_at=NOW + D))
    nodes = nodes_register(cluster=cluster, specs=specs)
    by = {n.hostname: n for n in Node.objects.filter(hostname__in=[s.hostname for s in specs])}
    steps = [
        (f"b{k}-0", "down", LAST - 3 * H),  # across the week's start
        (f"b{k}-0", "healthy", LAST + 5 * H + dt.timedelta(microseconds=7)),
        (f"b{k}-1", "drained", LAST + D + 23 * H),  # across midnight
        (f"b{k}-1", "maintenance", LAST + 2 * D + 2.5 * H),
        (f"b{k}-1", "healthy", LAST + 2 * D + 4 * H),
        (f"b{k}-2", "down", THIS - H),  # across the week's end, into today or later
        (f"b{k}-2", "healthy", max(THIS - H / 2, min(THIS + 20 * H, NOW - 2 * H))),
        (f"b{k}-3", "suspect", LAST - 9 * D),  # available, then down since
        (f"b{k}-3", "down", LAST - 2 * D + 7 * H),
        (f"b{k}-mid", "down", mid + H),
        (f"b{k}-mid", "healthy", mid + D),
    ]
    if NOW - 2 * H > THIS:
        steps.append((f"b{k}-4", "drained", NOW - 2 * H))  # today, still drained
    for host, state, at in sorted(steps, key=lambda s: s[2]):
        node_set_state(node=by[host], state=state, reason="t", at=at)
    return nodes


def _raw(cluster: Cluster, start: dt.datetime, end: dt.datetime) -> float | None:
    nodes = node_histories(cluster=cluster, start=start, end=end)
    return availability(nodes, start=start, end=end, now=NOW)["availability"]  # type: ignore[return-value]


WINDOWS = [
    (LAST - WEEK, LAST),
    (LAST, THIS),
    (THIS, THIS + WEEK),
    (LAST + 5.5 * H, NOW),  # mid-day to now
    (NOW - 50 * D, NOW),  # before any node
]


def test_day_sums_give_the_figures_of_the_raw_history(cluster):
    _history(cluster, 0)
    _history(cluster, 1)
    reports = [weekly_report(cluster=cluster, start=w, now=NOW) for w in (LAST, THIS)]
    live = [window_availability(cluster=cluster, start=s, end=e, now=NOW) for s, e in WINDOWS]
    for (s, e), figure in zip(WINDOWS, live, strict=True):
        raw = _raw(cluster, s, e)
        assert figure == pytest.approx(raw, rel=1e-12, abs=0), (s, e)
    assert live[1] is not None and live[1] < 1.0  # last week lost some time
    sealed = seal_days(cluster=cluster, now=NOW, limit=100)
    assert (THIS - D).date() in sealed and (LAST - 2 * D).date() in sealed
    tuesday = NodeDayDown.objects.filter(day=(LAST + D).date()).values_list(
        "node__hostname", "down_us"
    )
    hour, day = 3600 * 10**6, 86400 * 10**6  # drained from 23:00; down all day
    assert sorted(tuesday) == [("b0-1", hour), ("b0-3", day), ("b1-1", hour), ("b1-3", day)]
    assert seal_days(cluster=cluster, now=NOW) == []  # nothing stale: nothing done
    # With the days summed: the very same report, to the last bit.
    assert [weekly_report(cluster=cluster, start=w, now=NOW) for w in (LAST, THIS)] == reports
    summed = [window_availability(cluster=cluster, start=s, end=e, now=NOW) for s, e in WINDOWS]
    assert summed == live


def test_a_back_filled_change_is_read_from_the_history_until_summed_again(cluster):
    nodes = _history(cluster, 0)
    seal_days(cluster=cluster, now=NOW)
    before = window_availability(cluster=cluster, start=LAST, end=THIS, now=NOW)
    late = LAST + 3 * D + 22 * H  # Thursday 22:00 to Friday 01:00: two summed days
    node_set_state(node=nodes[4], state="down", reason="late", at=late)
    node_set_state(node=nodes[4], state="healthy", reason="late", at=late + 3 * H)
    after = window_availability(cluster=cluster, start=LAST, end=THIS, now=NOW)
    assert after == pytest.approx(_raw(cluster, LAST, THIS), rel=1e-12, abs=0)
    assert after is not None and before is not None and after < before
    # Beat sums again the days from the change's on (their state at midnight may differ),
    # not those before it; the figure stays.
    again = seal_days(cluster=cluster, now=NOW)
    assert late.date() in again and (late - D).date() not in again
    assert window_availability(cluster=cluster, start=LAST, end=THIS, now=NOW) == after


def test_a_moved_in_service_time_is_read_from_the_history(cluster):
    _history(cluster, 0)
    seal_days(cluster=cluster, now=NOW)
    Node.objects.filter(hostname="b0-1").update(in_service_at=LAST + 2 * D + 3 * H)
    figure = window_availability(cluster=cluster, start=LAST, end=THIS, now=NOW)
    assert figure == pytest.approx(_raw(cluster, LAST, THIS), rel=1e-12, abs=0)


def test_beat_sums_the_days_hourly(cluster):
    assert beat_schedule()["seal-availability-days"]["task"] == seal_availability_days.name
    _history(cluster, 0)
    seal_availability_days()
    assert AvailabilityDay.objects.filter(cluster=cluster, day=(THIS - D).date()).exists()


def _page(client) -> list[str]:  # noqa: ANN001
    path = f"/reports/weekly/?cluster=c1&week={week_label(LAST)}"
    client.get(path)  # the page's chrome (the pipeline banner) is read at most so often
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code == 200
    assert "GPU availability" in response.content.decode()
    return [q["sql"] for q in queries.captured_queries]


def test_three_times_the_nodes_cost_the_page_no_query_more(cluster, client, users):
    """Last week's page, its days summed, reads no node's history: its statements are the
    same in number whatever the nodes, and none reads each node's state at a time."""
    client.force_login(users["mia"])
    _history(cluster, 0)
    seal_days(cluster=cluster, now=timezone.now())
    small = _page(client)
    _history(cluster, 1)
    _history(cluster, 2)
    seal_days(cluster=cluster, now=timezone.now())
    large = _page(client)
    assert len(large) == len(small)
    assert not [sql for sql in large if '"at_start"' in sql]
