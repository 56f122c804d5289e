"""docs/formulas.md, Reliability, against hand-computed cases and against the Llama 3 405B
record."""

from __future__ import annotations

import csv
import datetime as dt

import pytest

from apps.reports.reliability import IncidentTimes, reliability
from tests.support import SHARED

T0 = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)  # a Monday
H = dt.timedelta(hours=1)


def inc(
    at: dt.datetime,
    *,
    planned=False,
    interrupts=True,
    category="gpu",
    detect=60,
    localize=600,
    recover=3600,
    nodes=True,
    occurred=True,
) -> IncidentTimes:
    occurred_at = at if occurred else None
    detected = at + dt.timedelta(seconds=detect)
    return IncidentTimes(
        occurred_at,
        detected,
        detected + dt.timedelta(seconds=localize),
        at + dt.timedelta(seconds=recover),
        interrupts,
        planned,
        category,
        nodes,
    )


def test_hand_computed_week():
    nodes = [T0 - dt.timedelta(days=30)] * 10  # 10 nodes, in service all week
    incidents = [
        inc(T0 + 10 * H, detect=120, localize=300, recover=1800),
        inc(T0 + 50 * H, category="hang", detect=600, localize=900, recover=5400),
        inc(T0 + 60 * H, planned=True, category="host_maintenance"),
        inc(T0 + 70 * H, interrupts=False),  # not an interruption
        inc(T0 + 200 * H),  # outside the week
        inc(T0 + 90 * H, nodes=False, category="software_bug", occurred=False),
    ]
    r = reliability(
        start=T0,
        end=T0 + 168 * H,
        now=T0 + 400 * H,
        incidents=incidents,
        in_service=nodes,
        job_nodes=5,
    )
    assert r["interruptions"] == 3 and r["planned_interruptions"] == 1
    assert r["mtbf_hours"] == pytest.approx(168 / 3)
    # MTTR over the three: 30 min, 90 min, 60 min (f = detected for the one without occurred_at)
    assert r["mttr_minutes"] == pytest.approx((30 + 90 + (3600 - 60) / 60) / 3)
    assert r["mttd_minutes"] == pytest.approx((2 + 10) / 2)  # only those with occurred_at
    assert r["mttl_minutes"] == pytest.approx((5 + 15 + 10) / 3)
    assert r["node_days"] == pytest.approx(70)
    assert r["failure_rate_per_1000_node_days"] == pytest.approx(1000 * 2 / 70)
    assert r["node_mtbf_hours"] == pytest.approx(70 * 24 / 2)
    assert r["projected_job_mttf_hours"] == pytest.approx(70 * 24 / 2 / 5)
    assert r["by_category"] == [
        {"category": "gpu", "count": 1, "share": pytest.approx(1 / 3)},
        {"category": "hang", "count": 1, "share": pytest.approx(1 / 3)},
        {"category": "software_bug", "count": 1, "share": pytest.approx(1 / 3)},
    ]


def test_window_clipped_to_now_and_to_the_first_node():
    nodes = [T0 + 24 * H, T0 + 48 * H]
    r = reliability(
        start=T0, end=T0 + 168 * H, now=T0 + 72 * H, incidents=[inc(T0 + 30 * H)], in_service=nodes
    )
    assert r["hours"] == pytest.approx(48)  # from the first node's in_service_at to now
    assert r["mtbf_hours"] == pytest.approx(48)
    assert r["node_days"] == pytest.approx(2 + 1)


def test_no_interruptions_means_no_mtbf():
    r = reliability(start=T0, end=T0 + H, now=T0 + H, incidents=[], in_service=[T0 - H])
    assert r["mtbf_hours"] is None and r["node_mtbf_hours"] is None and r["by_category"] == []


def test_llama3_405b_record():
    """419 unexpected interruptions in 54 days on 16,384 GPUs (2,048 nodes) → ~3.1 h."""
    with (SHARED / "llama3_interruptions.csv").open() as handle:
        counts = {row["category_slug"]: int(row["count"]) for row in csv.DictReader(handle)}
    total = sum(counts.values())
    assert total == 419
    start, days = T0, 54
    step = dt.timedelta(days=days) / total
    incidents, k = [], 0
    for category, count in counts.items():
        for _ in range(count):
            incidents.append(inc(start + step * k + dt.timedelta(minutes=1), category=category))
            k += 1
    incidents += [
        inc(start + step * i, planned=True, category="host_maintenance") for i in range(47)
    ]
    r = reliability(
        start=start,
        end=start + dt.timedelta(days=days),
        now=start + dt.timedelta(days=60),
        incidents=incidents,
        in_service=[start] * 2048,
        job_nodes=2048,
    )
    assert round(r["mtbf_hours"], 4) == round(54 * 24 / 419, 4) == 3.0931
    assert r["planned_interruptions"] == 47
    assert r["failure_rate_per_1000_node_days"] == pytest.approx(1000 * 419 / (2048 * 54))
    assert round(r["projected_job_mttf_hours"], 4) == 3.0931  # a job on every node
    assert r["by_category"][0] == {
        "category": "gpu",
        "count": 148,
        "share": pytest.approx(148 / 419),
    }
