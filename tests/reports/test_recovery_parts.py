"""docs/formulas.md, Recovery time and its parts: each recovery cut into detect, localise,
mitigate and restart (missing times giving their share to the next part, cuts kept inside
the recovery), the mean of each part per ISO week, and the reliability page's chart of them
with its reference line at 10 minutes — against minutes computed by hand."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from django.utils import timezone

from apps.common.weeks import WEEK, week_label, week_start
from apps.incidents.services import incident_open
from apps.reports.recovery_parts import RecoveryTimes, recovery_parts
from apps.reports.reliability_charts import recovery_parts_figure
from apps.reports.selectors import recovery_by_week
from apps.reports.targets import RECOVERY_REFERENCE_MINUTES

T0 = dt.datetime(2026, 3, 3, 10, 0, tzinfo=dt.UTC)  # Tuesday of 2026-W10
M = dt.timedelta(minutes=1)


def minutes(parts: dict[str, float]) -> dict[str, float]:
    return {k: v / 60 for k, v in parts.items()}


def times(d=None, loc=None, mit=None, rec=0):  # noqa: ANN001, ANN201
    def at(k):  # noqa: ANN001, ANN202
        return None if k is None else T0 + k * M

    return RecoveryTimes(T0, at(d), at(loc), at(mit), at(rec))


def test_every_time_set_cuts_the_recovery_in_four():
    # 10:00 failed, 10:03 detected, 10:05 localised, 10:12 mitigated, 10:20 resumed
    assert minutes(recovery_parts(times(3, 5, 12, 20))) == {
        "detect": 3,
        "localise": 2,
        "mitigate": 7,
        "restart": 8,
    }


def test_a_missing_time_gives_its_share_to_the_next_part():
    # no localised: detected → mitigated is all mitigate
    assert minutes(recovery_parts(times(3, None, 12, 20))) == {
        "detect": 3,
        "localise": 0,
        "mitigate": 9,
        "restart": 8,
    }
    # no localised and no mitigated: detected → resumed is all restart
    assert minutes(recovery_parts(times(3, None, None, 20))) == {
        "detect": 3,
        "localise": 0,
        "mitigate": 0,
        "restart": 17,
    }


def test_cuts_stay_in_order_and_inside_the_recovery():
    # Slurm requeued and training resumed at 10:14, the node was drained at 10:30
    assert minutes(recovery_parts(times(2, 4, 30, 14))) == {
        "detect": 2,
        "localise": 2,
        "mitigate": 10,
        "restart": 0,
    }
    # localised recorded before detected (a person's guess): never a negative part
    parts = minutes(recovery_parts(times(5, 1, 8, 10)))
    assert parts == {"detect": 5, "localise": 0, "mitigate": 3, "restart": 2}
    assert sum(parts.values()) == 10  # always the whole recovery


def open_interruption(cluster, *, failed, detect, loc=None, mit=None, rec=None, **kw):  # noqa: ANN001, ANN003, ANN201
    """An unexpected interruption failed at `failed`, its other times minutes after it."""

    def at(k):  # noqa: ANN001, ANN202
        return None if k is None else failed + k * M

    occurred = kw.pop("occurred", True)
    return incident_open(
        cluster=cluster,
        title="XID 79",
        category="gpu",
        severity="sev2",
        occurred_at=failed if occurred else None,
        detected_at=at(detect),
        localized_at=at(loc),
        mitigated_at=at(mit),
        recovered_at=at(rec),
        interrupts_job=True,
        actor="erin",
        **kw,
    )


@pytest.mark.django_db
def test_weekly_means_by_hand_and_empty_weeks_are_gaps(cluster):  # noqa: ANN001
    w10 = week_start(T0)  # Monday 2026-03-02
    # W10: A = 4 + 2 + 1 + 9 = 16 min; B (no occurred_at, no localised) = 0 + 0 + 8 + 12
    open_interruption(cluster, failed=w10 + dt.timedelta(days=1), detect=4, loc=6, mit=7, rec=16)
    open_interruption(
        cluster, failed=w10 + dt.timedelta(days=2), detect=0, mit=8, rec=20, occurred=False
    )
    # not counted: planned, not recovered, not an interruption
    open_interruption(cluster, failed=w10 + dt.timedelta(days=3), detect=1, rec=90, planned=True)
    open_interruption(cluster, failed=w10 + dt.timedelta(days=3), detect=1, loc=2)
    incident_open(
        cluster=cluster,
        title="fan",
        category="gpu_thermal",
        severity="sev4",
        detected_at=w10 + dt.timedelta(days=4),
        recovered_at=w10 + dt.timedelta(days=4, hours=5),
        actor="erin",
    )
    # W08: C = 1 + 2 + 3 + 4 = 10 min
    open_interruption(cluster, failed=w10 - 2 * WEEK, detect=1, loc=3, mit=6, rec=10)
    now = w10 + WEEK + dt.timedelta(days=3)  # Thursday of W11
    weeks = recovery_by_week(cluster=cluster, start=now - dt.timedelta(days=30), now=now)
    assert [w["week"] for w in weeks] == [
        "2026-W07",
        "2026-W08",
        "2026-W09",
        "2026-W10",
        "2026-W11",
    ]
    by = {w["week"]: w for w in weeks}
    assert by["2026-W10"]["interruptions"] == 2
    assert by["2026-W10"]["parts_minutes"] == pytest.approx(
        {"detect": 2.0, "localise": 1.0, "mitigate": 4.5, "restart": 10.5}
    )
    assert by["2026-W10"]["recovery_minutes"] == pytest.approx(18.0)  # (16 + 20) / 2
    assert by["2026-W08"]["parts_minutes"] == pytest.approx(
        {"detect": 1.0, "localise": 2.0, "mitigate": 3.0, "restart": 4.0}
    )
    for week in ("2026-W07", "2026-W09", "2026-W11"):
        assert by[week]["interruptions"] == 0
        assert by[week]["recovery_minutes"] is None
        assert set(by[week]["parts_minutes"].values()) == {None}  # a gap, not 0
    assert [w["complete"] for w in weeks] == [True, True, True, True, False]

    fig = recovery_parts_figure(weeks)
    assert fig["layout"]["barmode"] == "stack"
    bars = {t["name"]: t for t in fig["data"]}
    assert list(bars) == ["detect", "localise", "mitigate", "restart"]
    assert bars["mitigate"]["y"][3] == pytest.approx(4.5)
    assert bars["restart"]["x"][4] == "2026-W11 (so far)"
    assert all(t["y"][k] is None for t in fig["data"] for k in (0, 2, 4))
    [line] = fig["layout"]["shapes"]
    assert line["y0"] == line["y1"] == RECOVERY_REFERENCE_MINUTES == 10
    assert line["label"]["text"] == "recovery in minutes: 10 min"
    assert line["line"]["dash"] == "dashdot"  # a reference, drawn as one, not a target
    notes = [a["x"] for a in fig["layout"]["annotations"]]
    assert notes == ["2026-W07", "2026-W09", "2026-W11 (so far)"]  # "no data" on each gap
    assert fig["layout"]["yaxis"]["title"]["text"] == "mean minutes"


@pytest.mark.django_db
def test_the_reliability_page_charts_recovery_by_week(client, users, cluster):  # noqa: ANN001
    last = week_start(timezone.now()) - WEEK  # the last complete week, inside 30 days
    open_interruption(cluster, failed=last + dt.timedelta(days=1), detect=2, loc=5, mit=9, rec=14)
    open_interruption(cluster, failed=last + dt.timedelta(days=2), detect=4, loc=5, mit=7, rec=30)
    client.force_login(users["mia"])
    page = client.get("/reliability/?cluster=c1&days=30").content.decode()
    assert "Recovery time by week and its parts: mean minutes per part" in page
    fig = json.loads(
        re.search(r'<script id="recovery-data" type="application/json">(.*?)</script>', page)[1]
    )
    column = fig["data"][0]["x"].index(week_label(last))
    # detect (2 + 4) / 2, localise (3 + 1) / 2, mitigate (4 + 2) / 2, restart (5 + 23) / 2
    assert [t["y"][column] for t in fig["data"]] == pytest.approx([3.0, 2.0, 3.0, 14.0])
    assert len(fig["data"][0]["x"]) >= 5  # every week the 30 days touch
    assert fig["layout"]["shapes"][0]["y0"] == 10
