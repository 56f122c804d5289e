"""Effective rate and availability (docs/formulas.md) against hand-computed weeks (pure, no
database)."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.reports.availability import NodeHistory, availability, bucket_seconds, unavailable
from apps.reports.effective import Interruption, JobRun, job_week, restart_point, weekly

UTC = dt.UTC
MON = dt.datetime(2026, 11, 16, tzinfo=UTC)  # ISO week 2026-W47
NEXT = MON + dt.timedelta(weeks=1)
NOW = dt.datetime(2026, 11, 30, tzinfo=UTC)
H = 3600


def t(day: int, hour: int = 0, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, day, hour, minute, tzinfo=UTC)


# A starts inside the week (Wed), never interrupted, one 60 s checkpoint.
A = JobRun(1, "a", 8, t(18), None, checkpoints=[(t(19), 60.0)])
# B started before the week and ends inside it; fails 01:00 Monday, recovered 03:00; the
# checkpoint at 00:55 was still being written at the failure, so rework runs from 23:00 Sunday
# (clipped to the week: one hour); that checkpoint's own blocking time is already lost.
B = JobRun(
    2,
    "b",
    16,
    t(10),
    t(20, 12),
    interruptions=[Interruption(20, t(16, 1), t(16, 3), planned=False)],
    checkpoints=[(t(15, 23), 600.0), (t(16, 0, 55), 600.0)],
)
# C fails late Sunday and recovers in the next week: downtime counts to the week's end.
C = JobRun(
    3,
    "c",
    4,
    t(1),
    None,
    interruptions=[Interruption(30, t(22, 22), t(23, 2), planned=False)],
    checkpoints=[(t(22, 21), 120.0)],
)
# D: a planned stop 10:00–12:00 overlapped by a failure 11:00–13:00 (rework from 10:30).
D = JobRun(
    4,
    "d",
    8,
    t(1),
    None,
    interruptions=[
        Interruption(40, t(17, 10), t(17, 12), planned=True),
        Interruption(41, t(17, 11), t(17, 13), planned=False),
    ],
    checkpoints=[(t(17, 10, 30), 60.0)],
)


def test_each_job_clipped_and_overlaps_counted_once():
    a = job_week(A, start=MON, end=NEXT, now=NOW)
    assert (a.wall_s, a.lost_s, a.by_cause["checkpoint"]) == (5 * 24 * H, 60, 60)
    b = job_week(B, start=MON, end=NEXT, now=NOW)
    assert b.wall_s == 4.5 * 24 * H and b.lost_s == 3 * H
    assert b.by_cause == {"downtime": 2 * H, "planned": 0, "rework": 1 * H, "checkpoint": 0}
    assert b.by_incident == {20: 3 * H}
    c = job_week(C, start=MON, end=NEXT, now=NOW)
    assert c.wall_s == 7 * 24 * H and c.lost_s == 3 * H
    assert c.by_cause == {"downtime": 2 * H, "planned": 0, "rework": 1 * H, "checkpoint": 0}
    d = job_week(D, start=MON, end=NEXT, now=NOW)
    assert d.lost_s == 3 * H  # 10:00–13:00 once
    assert d.by_cause == {"downtime": 2 * H, "planned": 1 * H, "rework": 0, "checkpoint": 0}
    assert d.by_incident == {40: 1 * H, 41: 2 * H}


def test_the_week_gpu_weighted():
    report = weekly([A, B, C, D], start=MON, end=NEXT, now=NOW)
    # scheduled: (8×120 + 16×108 + 4×168 + 8×168) GPU-h = 4704
    assert report["scheduled_gpu_hours"] == pytest.approx(4704)
    lost = report["lost_gpu_hours"]
    assert lost["downtime"] == pytest.approx(16 * 2 + 4 * 2 + 8 * 2)
    assert lost["rework"] == pytest.approx(16 + 4)
    assert lost["planned"] == pytest.approx(8)
    assert lost["checkpoint"] == pytest.approx(8 * 60 / 3600)
    assert report["effective_rate"] == pytest.approx(1 - (84 + 2 / 15) / 4704, abs=1e-12)
    assert report["productive_gpu_hours"] == pytest.approx(4704 - 84 - 2 / 15)
    assert [j["id"] for j in report["jobs"]] == [2, 4, 3, 1]  # costliest first
    assert report["by_incident"] == pytest.approx({20: 48, 30: 12, 40: 8, 41: 16})


def test_no_checkpoint_at_all_reworks_from_the_start():
    job = JobRun(5, "e", 8, t(16, 6), None, [Interruption(50, t(16, 10), t(16, 11), False)])
    week = job_week(job, start=MON, end=NEXT, now=NOW)
    assert week.by_cause["rework"] == 4 * H and week.by_cause["downtime"] == 1 * H


def test_recovery_unknown_runs_to_the_end_of_the_run_or_week():
    open_ended = JobRun(6, "f", 8, t(1), None, [Interruption(60, t(22, 20), None, True)])
    assert job_week(open_ended, start=MON, end=NEXT, now=NOW).by_cause["planned"] == 4 * H
    ended = JobRun(7, "g", 8, t(1), t(22, 21), [Interruption(70, t(22, 20), None, True)])
    assert job_week(ended, start=MON, end=NEXT, now=NOW).lost_s == 1 * H


def test_current_week_is_clipped_to_now_and_empty_weeks_have_no_rate():
    now = dt.datetime(2026, 11, 30, 12, tzinfo=UTC)
    job = JobRun(8, "h", 8, t(1), None)
    week = job_week(job, start=now.replace(hour=0), end=now + dt.timedelta(days=7), now=now)
    assert week.wall_s == 12 * H and week.effective_rate == 1.0
    assert weekly([], start=MON, end=NEXT, now=NOW)["effective_rate"] is None
    later = JobRun(9, "i", 8, t(24), None)  # starts after the week
    assert weekly([later], start=MON, end=NEXT, now=NOW)["jobs"] == []


def test_restart_point_skips_a_checkpoint_still_being_written():
    cps = [(t(16, 1), 60.0), (t(16, 2), 3600.0)]
    assert restart_point(cps, t(16, 2, 30)) == t(16, 1)
    assert restart_point(cps, t(16, 3)) == t(16, 2)
    assert restart_point(cps, t(16, 0)) is None


def test_mean_mfu_is_gpu_weighted_over_jobs_with_samples():
    a = JobRun(1, "a", 8, t(1), None, mean_mfu=0.40)
    b = JobRun(2, "b", 24, t(1), None, mean_mfu=0.50)
    c = JobRun(3, "c", 64, t(1), None, mean_mfu=None)  # no samples in the week: left out
    assert weekly([a, b, c], start=MON, end=NEXT, now=NOW)["mean_mfu"] == pytest.approx(0.475)


NODES = [
    NodeHistory("n1", 8, t(10), None, [(t(17, 6), "drained"), (t(17, 18), "healthy")]),
    NodeHistory("n2", 8, t(19), None, [(t(20), "suspect"), (t(22, 12), "maintenance")]),
    NodeHistory("n3", 8, t(1), "down", [(t(16, 6), "healthy")]),
]


def test_availability_from_state_history():
    report = availability(NODES, start=MON, end=NEXT, now=NOW)
    assert report["availability"] == pytest.approx(402 / 432)
    n1, n2, n3 = report["by_node"]
    assert (n1["unavailable_hours"], n2["in_service_hours"], n2["unavailable_hours"]) == (
        12,
        96,
        12,
    )
    assert n3["availability"] == pytest.approx(162 / 168)


def test_availability_weights_gpus_and_ignores_time_out_of_service():
    big = NodeHistory("big", 16, t(1), "down", [])
    small = NodeHistory("small", 4, t(1), None, [])
    future = NodeHistory("later", 8, t(25), None, [])
    report = availability([big, small, future], start=MON, end=NEXT, now=NOW)
    assert report["availability"] == pytest.approx(4 / 20)
    assert report["by_node"][2]["availability"] is None


def test_unavailable_intervals_and_buckets():
    gaps = unavailable(NODES[0], MON, NEXT, NOW)
    assert gaps == [(t(17, 6), t(17, 18))]
    edges = [t(17), t(17, 12), t(18)]
    assert bucket_seconds(gaps, edges) == [6 * H, 6 * H]


def test_blocked_seconds_over_any_window():
    # two saves overlap (10:00–10:10 and 10:05–10:15 → 15 min), one alone at 12:00 for 5 min
    job = JobRun(
        1,
        "j",
        8,
        t(16),
        None,
        checkpoints=[(t(16, 12), 300.0), (t(16, 10, 5), 600.0), (t(16, 10), 600.0)],
    )
    assert job.blocked_seconds(t(16), t(17)) == 20 * 60
    assert job.blocked_seconds(t(16, 10, 7), t(16, 12, 2)) == 8 * 60 + 2 * 60
    assert job.blocked_seconds(t(16, 10, 20), t(16, 11)) == 0
    assert job.blocked_seconds(t(16, 12, 1), t(16, 12, 3)) == 120
    assert JobRun(2, "k", 8, t(16), None).blocked_seconds(t(16), t(17)) == 0
    week = job_week(job, start=MON, end=NEXT, now=NOW)
    assert week.by_cause["checkpoint"] == week.lost_s == 20 * 60
