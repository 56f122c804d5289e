"""An incident's road back as one line (docs/incidents.md, The road back): the marks in their
order, each set time with the time since the mark before it, missing times shown as missing,
a time recorded out of order said with "before", and the Times table with every time."""

from __future__ import annotations

import datetime as dt
import html
import re

import pytest

from apps.incidents.models import Incident
from apps.incidents.selectors import MARKS, road_back, road_summary
from apps.incidents.services import TIMES, incident_open

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 1, 5, 10, 0, tzinfo=dt.UTC)  # well in the past: no paging, no clock


def at(minutes: float) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


@pytest.fixture
def requeued(cluster) -> Incident:  # noqa: ANN001
    """Slurm requeued the job (restarted, 10:10) before the node was drained (mitigated,
    10:12); the job has not caught up yet."""
    return incident_open(
        cluster=cluster,
        title="XID 79 on gpu001",
        category="gpu",
        severity="sev2",
        occurred_at=at(0),
        detected_at=at(3),
        localized_at=at(5),
        mitigated_at=at(12),
        restarted_at=at(10),
        restored_at=at(14),
        recovered_at=at(14),
        interrupts_job=True,
        actor="erin",
    )


def road_html(page: str) -> str:
    return page.split('<div class="road"', 1)[1].split("</div>\n  <h3", 1)[0]


def test_the_road_has_its_marks_in_order_with_the_minutes_between(requeued):
    road = road_back(requeued)
    assert [m.label for m in road] == [
        "failed",
        "detected",
        "localised",
        "mitigated",
        "restarted",
        "restored",
        "recovered",
        "caught up",
    ]  # no resolved: it is not set
    assert [m.at for m in road] == [at(0), at(3), at(5), at(12), at(10), at(14), at(14), None]
    # by hand: 3, 2, 7 min; restarted 2 min *before* mitigated; restored 4 min after restarted
    assert [m.gap_text for m in road] == [
        "",
        "+3 min",
        "+2 min",
        "+7 min",
        "2 min before mitigated",
        "+4 min",
        "+0 s",
        "",
    ]
    assert all(m.gap_s is None or m.gap_s >= 0 for m in road)
    assert road[-1].state == "not yet"  # nothing later is known and it is not resolved


def test_a_missing_time_is_never_invented(cluster):  # noqa: ANN001
    incident = incident_open(
        cluster=cluster,
        title="NCCL timeout",
        category="nccl_timeout",
        severity="sev2",
        detected_at=at(0),  # no occurred_at: f(i) is detected_at
        mitigated_at=at(6),
        resolved_at=at(90),
        interrupts_job=True,
        actor="erin",
    )
    road = {m.label: m for m in road_back(incident)}
    assert list(road) == [
        "failed",
        "detected",
        "localised",
        "mitigated",
        "restarted",
        "restored",
        "caught up",
        "resolved",
    ]
    assert road["failed"].at == at(0) and road["failed"].note == "= detected"
    assert road["detected"].gap_text == "+0 s"
    assert road["localised"].at is None and road["localised"].state == "not recorded"
    # measured from the last mark that has a time, and it says from which
    assert road["mitigated"].gap_text == "+6 min after detected"
    assert road["restarted"].state == "not recorded"  # resolved: it will not come now
    assert road["resolved"].gap_text == "+84 min after mitigated"


def test_the_page_draws_the_road_with_its_label_and_times(client, users, requeued):  # noqa: ANN001
    client.force_login(users["mia"])
    page = client.get(f"/incidents/{requeued.pk}/").content.decode()
    road = road_html(page)
    marks = re.findall(r'data-mark="([^"]+)"', road)
    assert marks == [
        "failed",
        "detected",
        "localised",
        "mitigated",
        "restarted",
        "restored",
        "recovered",
        "caught up",
    ]
    gaps = [html.unescape(g) for g in re.findall(r'<span class="gap">([^<]*)</span>', road)]
    assert gaps == [
        "+3 min",
        "+2 min",
        "+7 min",
        "2 min before mitigated",
        "+4 min",
        "+0 s",
        "",
    ]
    assert '<time datetime="2026-01-05T10:10:00+00:00"' in road  # restarted, as recorded
    assert "not yet" in road.rsplit('data-mark="caught up"', 1)[1]
    assert "-2 min" not in page and "+-" not in page
    label = html.unescape(re.search(r'role="img" aria-label="([^"]+)"', road).group(1))
    assert label == road_summary(road_back(requeued))
    assert label == (
        "The road back: failed 01-05 10:00 UTC; detected 01-05 10:03 UTC (+3 min); "
        "localised 01-05 10:05 UTC (+2 min); mitigated 01-05 10:12 UTC (+7 min); "
        "restarted 01-05 10:10 UTC (2 min before mitigated); restored 01-05 10:14 UTC "
        "(+4 min); recovered 01-05 10:14 UTC (+0 s); caught up not yet."
    )
    # the Times table: every time, the new ones too, missing ones said
    table = page.split('id="times-table-h"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<th scope="row">([^<]+)</th>', table)
    assert rows == [
        "Occurred",
        "Detected",
        "Localised",
        "Mitigated",
        "Restarted",
        "Restored",
        "Recovered",
        "Caught up",
        "Resolved",
    ]
    assert "12 min after the failure" in table and "10 min after the failure" in table
    assert table.count("not set") == 2  # caught up, resolved


def test_the_times_table_lists_every_time_an_incident_carries():
    assert [field for field, _ in MARKS] == list(TIMES)
