"""Where the failures' downtime went and how long recovery took (docs/formulas.md, Where the
downtime went; How long recovery took), over a week built by hand through the real services:
every figure below is worked out from the times chosen here, in minutes, and the API, the
page, the CSV and ZIP and the PDF must all show the same.

The week, 2026-W47 (Monday 16 November 00:00 to Monday 23 November 00:00 UTC):

Job A, 8 GPUs, runs Monday 00:00 to Saturday 00:00 (120 h); checkpoints Tue 09:00 and Wed
11:30, 60 s each.
- I1, Tue 10:00 failed, 10:06 detected, 10:20 localised, 10:30 mitigated, 11:00 recovered:
  detect 6, localise 14, mitigate 10, restart 30 min; rework 09:00–10:00.
- I2, Tue 10:40 failed, 10:45 detected, never localised, 11:10 mitigated, 11:30 recovered.
  It overlaps I1's downtime: 10:40–11:00 is I1's (it failed first), I2 keeps 11:00–11:30,
  which lies in its mitigate part (10:45–11:10: the missing localisation gives its share to
  mitigate) for 10 min and its restart part (11:10–11:30) for 20 min. Its rework
  09:00–10:40 is already rework and downtime.
- I3, Wed 12:00 failed, 12:05 detected, neither localised nor mitigated, 12:45 recovered:
  detect 5, restart 40; rework 11:30–12:00.
- P, Thu 14:00–15:00, planned: 60 min planned downtime, no part of the breakdown.
Job B, 16 GPUs, running since 10 November (168 h in the week); a checkpoint Sun 22:00, 60 s.
- I4, failed Sun 15 Nov 23:00 (the week before), 23:20 detected, Mon 00:10 localised, 00:40
  mitigated, 01:00 recovered: inside the week localise 10, mitigate 30, restart 20.
- I5, Sun 22 Nov 23:00 failed, 23:10 detected, 23:30 localised, Mon 23 Nov 00:20 mitigated,
  01:00 recovered: inside the week detect 10, localise 20, mitigate 30; rework 22:00–23:00.
Job C, 4 GPUs, runs Monday 00:00 to Friday 00:00 (96 h); a checkpoint Thu 19:00, 30 s.
- I6, Thu 20:00 failed, 20:30 detected, never recovered: downtime to the job's end, detect
  30, restart 210; rework 19:00–20:00.
I7, Fri 08:00–08:15, an unexpected interruption of no job: no downtime, but a recovery.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest

from apps.incidents.models import Incident
from apps.incidents.services import incident_open
from apps.jobs.models import JobPhase
from apps.jobs.services import checkpoint_record
from tests.reports.tables import rows, tables
from tests.reports.test_weekly_api import _job, _phases
from tests.reports.test_weekly_pdf import content, runs

pytestmark = pytest.mark.django_db
UTC = dt.UTC
WEEK = "2026-W47"


def t(day: int, hour: int = 0, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, day, hour, minute, tzinfo=UTC)


# --- what the week must show, from the times above, by hand -----------------------------
# GPU-minutes per part: A (8 GPUs), B (16), C (4).
DETECT = 8 * (6 + 5) + 16 * 10 + 4 * 30  # 368
LOCALISE = 8 * 14 + 16 * (10 + 20)  # 592
MITIGATE = 8 * (10 + 10) + 16 * (30 + 30)  # 1,120
RESTART = 8 * (30 + 20 + 40) + 16 * 20 + 4 * 210  # 1,880
PARTS = {
    "detect": DETECT / 60,
    "localise": LOCALISE / 60,
    "mitigate": MITIGATE / 60,
    "restart": RESTART / 60,
}
DOWNTIME = 8 * (90 + 45) / 60 + 16 * 120 / 60 + 4 * 240 / 60  # 66 GPU-hours
SCHEDULED = 8 * 120 + 16 * 168 + 4 * 96  # 4,032 GPU-hours
LOST = {
    "downtime": DOWNTIME,
    "planned": 8 * 60 / 60,
    "rework": (8 * (60 + 30) + 16 * 60 + 4 * 60) / 60,  # 32: every save inside a rework
    "checkpoint": 0.0,
}
EFFECTIVE = 1 - sum(LOST.values()) / SCHEDULED  # 1 − 106 / 4,032
# Recovered unexpected interruptions failing in the week: I1 60, I2 50, I3 45, I5 120, I7 15
# minutes. Sorted 15, 45, 50, 60, 120: p50 at rank 2 → 50; p90 at rank 3.6 → 60 + 0.6 × 60.
RECOVERY = {"p50": 50.0, "p90": 96.0, "max": 120.0}
# Largest first.
PHASES = {"data_wait": 16 * 20 / 60, "eval": 8 * 30 / 60, "startup": 8 * 10 / 60}


def _incident(cluster, job, failed, detected, *, planned=False, **times):  # noqa: ANN001, ANN003, ANN202
    return incident_open(
        cluster=cluster,
        title=f"{job.name if job else 'fabric'} stop at {failed:%a %H:%M}",
        category="gpu",
        severity="sev3",
        occurred_at=failed,
        detected_at=detected,
        job=job,
        interrupts_job=True,
        planned=planned,
        **times,
    )


@pytest.fixture
def week(cluster, api):  # noqa: ANN001, ANN201
    """The jobs, checkpoints, incidents and phases of the module's docstring."""
    a = _job(cluster, "a", 8, t(16), t(21))
    checkpoint_record(job=a, step=1, saved_at=t(17, 9), blocking_s=60)
    checkpoint_record(job=a, step=2, saved_at=t(18, 11, 30), blocking_s=60)
    _incident(
        cluster,
        a,
        t(17, 10),
        t(17, 10, 6),
        localized_at=t(17, 10, 20),
        mitigated_at=t(17, 10, 30),
        recovered_at=t(17, 11),
    )
    _incident(
        cluster,
        a,
        t(17, 10, 40),
        t(17, 10, 45),
        mitigated_at=t(17, 11, 10),
        recovered_at=t(17, 11, 30),
    )
    _incident(cluster, a, t(18, 12), t(18, 12, 5), recovered_at=t(18, 12, 45))
    _incident(cluster, a, t(19, 14), t(19, 14), planned=True, recovered_at=t(19, 15))
    b = _job(cluster, "b", 16, t(10))
    checkpoint_record(job=b, step=1, saved_at=t(22, 22), blocking_s=60)
    _incident(
        cluster,
        b,
        t(15, 23),
        t(15, 23, 20),
        localized_at=t(16, 0, 10),
        mitigated_at=t(16, 0, 40),
        recovered_at=t(16, 1),
    )
    _incident(
        cluster,
        b,
        t(22, 23),
        t(22, 23, 10),
        localized_at=t(22, 23, 30),
        mitigated_at=t(23, 0, 20),
        recovered_at=t(23, 1),
    )
    c = _job(cluster, "c", 4, t(16), t(20))
    checkpoint_record(job=c, step=1, saved_at=t(19, 19), blocking_s=30)
    _incident(cluster, c, t(19, 20), t(19, 20, 30))
    _incident(cluster, None, t(20, 8), t(20, 8), recovered_at=t(20, 8, 15))
    # Phases away from every incident: time not spent training, not part of the rate.
    _phases(api, a, ("startup", t(16), t(16, 0, 10)), ("eval", t(18, 15), t(18, 15, 30)))
    _phases(api, b, ("data_wait", t(20, 3), t(20, 3, 20)))
    return {"a": a, "b": b, "c": c}


def test_the_downtime_breakdown_and_recovery_minutes_of_a_hand_built_week(api, client, users, week):
    # The API.
    body = api("mia").get(f"/api/v1/reports/weekly/?cluster=c1&week={WEEK}").json()
    assert body["scheduled_gpu_hours"] == pytest.approx(SCHEDULED)
    assert body["lost_gpu_hours"] == pytest.approx(LOST, abs=1e-9)
    assert body["effective_rate"] == pytest.approx(EFFECTIVE, abs=1e-12)
    parts = body["downtime_breakdown_gpu_hours"]
    assert list(parts) == ["detect", "localise", "mitigate", "restart"]
    assert parts == pytest.approx(PARTS, abs=1e-9)
    # The same instants as the downtime: they add up to it to the float's last digits.
    assert sum(parts.values()) == pytest.approx(body["lost_gpu_hours"]["downtime"], rel=1e-12)
    assert body["recovery_minutes"] == pytest.approx(RECOVERY)
    assert body["mttr_minutes"] == pytest.approx((60 + 50 + 45 + 120 + 15) / 5)
    assert body["interruptions"] == 6 and body["planned_interruptions"] == 1
    assert body["phase_gpu_hours"] == pytest.approx(PHASES, abs=1e-9)

    # The page: each part's bar, GPU-hours and share; the recovery minutes; the phases.
    client.force_login(users["mia"])
    html = client.get(f"/reports/weekly/?cluster=c1&week={WEEK}").content.decode()
    bars = re.findall(
        r'<tr role="row" data-part="(\w+)">.*?'
        r'<span class="bar downpart-\1" style="width: (\d+)%">.*?'
        r'data-gpu-hours="([\d.e-]+)">([\d.,]+) GPU·h</td>'
        r'<td role="cell" class="r muted nowrap" data-share="([\d.e-]+)">([\d.]+)% of downtime',
        html,
        re.S,
    )
    assert [b[0] for b in bars] == list(PARTS)
    for part, width, exact, shown, share, shown_share in bars:
        assert float(exact) == pytest.approx(PARTS[part], abs=1e-9)
        assert shown == f"{PARTS[part]:,.1f}"
        assert float(share) == pytest.approx(PARTS[part] / DOWNTIME)
        assert shown_share == f"{100 * PARTS[part] / DOWNTIME:.1f}"
        assert int(width) == round(100 * PARTS[part] / DOWNTIME)
    recovery = dict(re.findall(r'<dd data-recovery="(\w+)">([\d.]+) min</dd>', html))
    assert recovery == {k: f"{v:.1f}" for k, v in RECOVERY.items()}
    assert f"{100 * EFFECTIVE:.2f}%" in html
    shown_phases = re.findall(
        r'<tr><th scope="row" class="mono">(\w+)</th><td class="r">([\d.,]+) GPU·h', html
    )
    assert shown_phases == [(k, f"{v:,.1f}") for k, v in PHASES.items()]

    # The CSV (one row) and the ZIP's files.
    [row] = rows(client.get(f"/reports/weekly.csv?cluster=c1&week={WEEK}").content.decode())
    for part, hours in PARTS.items():
        assert float(row[f"failure_downtime_{part}_gpu_hours"]) == pytest.approx(hours, abs=1e-9)
    assert {k: float(row[f"recovery_minutes_{k}"]) for k in RECOVERY} == pytest.approx(RECOVERY)
    assert float(row["not_training_gpu_hours"]) == pytest.approx(sum(PHASES.values()))
    assert float(row["effective_rate"]) == pytest.approx(EFFECTIVE, abs=1e-12)
    files = tables(client.get(f"/reports/weekly.zip?cluster=c1&week={WEEK}").content)
    downtime = {r["part"]: r for r in files["downtime"]}
    assert list(downtime) == list(PARTS)
    assert {p: float(r["lost_gpu_hours"]) for p, r in downtime.items()} == pytest.approx(PARTS)
    assert {p: float(r["share_of_downtime"]) for p, r in downtime.items()} == pytest.approx(
        {p: h / DOWNTIME for p, h in PARTS.items()}
    )
    [losses_downtime] = [r for r in files["losses"] if r["cause"] == "downtime"]
    assert sum(float(r["lost_gpu_hours"]) for r in files["downtime"]) == pytest.approx(
        float(losses_downtime["lost_gpu_hours"]), rel=1e-12
    )
    assert {r["phase"]: float(r["gpu_hours"]) for r in files["phases"]} == pytest.approx(PHASES)

    # The PDF: the bars' figures and the recovery rows.
    text = runs(content(client.get(f"/reports/weekly.pdf?cluster=c1&week={WEEK}").content))
    assert "Where the failure downtime went" in text
    for part, hours in PARTS.items():
        assert f"{hours:,.1f} GPU-h  {100 * hours / DOWNTIME:.1f}% of downtime" in text, part
    assert "Recovery, 90th percentile (minutes)" in text and "96.0" in text


def test_the_new_fields_leave_the_effective_rate_as_it_was(api, week):
    """The same week with every detection, localisation and mitigation time and every phase
    taken away: the same effective rate and lost hours, and all the downtime in its restart
    part but for the detection (occurred_at to detected_at is still known)."""
    before = api("mia").get(f"/api/v1/reports/weekly/?cluster=c1&week={WEEK}").json()
    Incident.objects.update(localized_at=None, mitigated_at=None)
    JobPhase.objects.all().delete()
    after = api("mia").get(f"/api/v1/reports/weekly/?cluster=c1&week={WEEK}").json()
    assert after["effective_rate"] == before["effective_rate"] == pytest.approx(EFFECTIVE)
    assert after["lost_gpu_hours"] == before["lost_gpu_hours"]
    assert after["phase_gpu_hours"] == {}
    parts = after["downtime_breakdown_gpu_hours"]
    assert parts["localise"] == parts["mitigate"] == 0
    assert parts["detect"] == pytest.approx(PARTS["detect"])
    assert parts["detect"] + parts["restart"] == pytest.approx(DOWNTIME)
