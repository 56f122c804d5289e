"""Effective rate and availability (docs/formulas.md) against hand-computed weeks (pure, no
database)."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.reports.availability import NodeHistory, availability, bucket_seconds, unavailable
from apps.reports.effective import Interruption, JobRun, job_week, restart_point, weekly
from apps.reports.reliability import percentile, recovery_minutes

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


def _failure(pk: int, failed: dt.datetime, recovered: dt.datetime | None, **times):  # noqa: ANN003
    return Interruption(pk, failed, recovered, False, "gpu", **times)


def test_downtime_cut_at_detection_localisation_and_mitigation():
    """docs/formulas.md, Where the downtime went: 10:00 failed, 10:05 detected, 10:25
    localised, 10:30 mitigated, 11:00 recovered → 5, 20, 5 and 30 minutes."""
    times = {"detected_at": t(16, 10, 5), "localized_at": t(16, 10, 25)}
    job = JobRun(
        1,
        "j",
        8,
        t(1),
        None,
        [_failure(1, t(16, 10), t(16, 11), mitigated_at=t(16, 10, 30), **times)],
    )
    week = job_week(job, start=MON, end=NEXT, now=NOW)
    minutes = {k: v / 60 for k, v in week.downtime_parts.items()}
    assert minutes == {"detect": 5, "localise": 20, "mitigate": 5, "restart": 30}
    assert sum(week.downtime_parts.values()) == week.by_cause["downtime"]


def test_a_missing_or_out_of_order_time_gives_its_share_to_the_next_part():
    """No localisation: the mitigate part runs from the detection. A mitigation before the
    detection is held at it (the cuts never go back); one after the recovery at the
    recovery; a detection before the week's start is cut there like the downtime."""
    missing = _failure(
        1, t(16, 10), t(16, 11), detected_at=t(16, 10, 5), mitigated_at=t(16, 10, 30)
    )
    early = _failure(2, t(17, 10), t(17, 11), detected_at=t(17, 10, 5), mitigated_at=t(17, 10, 1))
    late = _failure(3, t(18, 10), t(18, 11), detected_at=t(18, 10, 5), mitigated_at=t(18, 12))
    nothing = _failure(4, t(19, 10), t(19, 11))  # only f(i) and recovered_at known
    job = JobRun(1, "j", 8, t(1), None, [missing, early, late, nothing])
    parts = job_week(job, start=MON, end=NEXT, now=NOW).downtime_parts
    # detect 5 + 5 + 5 + 0; mitigate 25 (missing) + 0 (early) + 55 (late); restart 30 + 55 + 0 + 60
    assert {k: v / 60 for k, v in parts.items()} == {
        "detect": 15,
        "localise": 0,
        "mitigate": 80,
        "restart": 145,
    }
    assert sum(parts.values()) == 4 * H


def test_overlapping_failures_give_the_instant_to_the_one_that_failed_first():
    """Two failures of one job at the same time: the lower incident number owns the shared
    instants, in the breakdown as in each incident's lost hours; a later failure inside an
    earlier one's downtime keeps only what lies beyond it."""
    first = _failure(7, t(16, 10), t(16, 11), detected_at=t(16, 10, 30))
    twin = _failure(6, t(16, 10), t(16, 10, 40), detected_at=t(16, 10, 10))
    later = _failure(5, t(16, 10, 50), t(16, 11, 20), detected_at=t(16, 11, 10))
    job = JobRun(1, "j", 8, t(1), None, [first, twin, later], checkpoints=[(t(16, 9), 0.0)])
    week = job_week(job, start=MON, end=NEXT, now=NOW)
    # 6 owns 10:00–10:40 (detect 10, restart 30); 7 owns 10:40–11:00 (detect: its
    # detection is 10:30, so all restart); 5 owns 11:00–11:20 (detect 10, restart 10). The
    # three reworks all start at the 09:00 save: 5, the lowest number, owns 09:00–10:00.
    assert week.by_incident == {6: 40 * 60, 7: 20 * 60, 5: 20 * 60 + 60 * 60}
    assert {k: v / 60 for k, v in week.downtime_parts.items()} == {
        "detect": 20,
        "localise": 0,
        "mitigate": 0,
        "restart": 60,
    }
    report = weekly([job], start=MON, end=NEXT, now=NOW)
    assert report["downtime_breakdown_gpu_hours"] == pytest.approx(
        {"detect": 8 * 20 / 60, "localise": 0, "mitigate": 0, "restart": 8 * 60 / 60}
    )


def test_planned_downtime_has_no_breakdown():
    planned = Interruption(1, t(16, 10), t(16, 11), True, "other", detected_at=t(16, 10, 30))
    week = job_week(JobRun(1, "j", 8, t(1), None, [planned]), start=MON, end=NEXT, now=NOW)
    assert week.by_cause["planned"] == H and sum(week.downtime_parts.values()) == 0


def test_percentiles_interpolate_between_closest_ranks():
    values = [15.0, 45.0, 50.0, 60.0, 120.0]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 90) == pytest.approx(96.0)  # rank 3.6: 60 + 0.6 × 60
    assert percentile(values, 100) == 120.0 and percentile(values, 0) == 15.0
    assert percentile([7.0], 90) == 7.0 and percentile([], 50) is None
    assert percentile([10.0, 20.0], 90) == pytest.approx(19.0)
    assert recovery_minutes([600.0, 1200.0]) == pytest.approx({"p50": 15, "p90": 19, "max": 20})
    assert recovery_minutes([]) == {"p50": None, "p90": None, "max": None}


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
