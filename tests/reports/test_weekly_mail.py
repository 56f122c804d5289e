"""The Monday e-mail: last week's report with its PDF and its tidy CSV tables (a ZIP), once
per cluster and week."""

from __future__ import annotations

import pytest
from celery.schedules import crontab
from django.test import override_settings

from apps.reports.models import ReportDelivery
from apps.reports.tasks import send_weekly_reports
from kuaeweb.schedule import beat_schedule
from tests.reports.tables import tables

pytestmark = pytest.mark.django_db


@override_settings(KUAE_REPORT_EMAILS=["cto@example.com", "ops-leads@example.com"])
def test_weekly_mail_is_sent_once_with_pdf_and_tables(mailoutbox, cluster, nodes, job):
    send_weekly_reports("2026-W47")  # the task body, as a worker runs it
    assert len(mailoutbox) == 1
    mail = mailoutbox[0]
    assert mail.to == ["cto@example.com", "ops-leads@example.com"]
    assert "2026-W47" in mail.subject and "Effective training rate" in mail.body
    names = sorted(a[0] for a in mail.attachments)
    assert names == ["kuae-weekly-c1-2026-W47.pdf", "kuae-weekly-c1-2026-W47.zip"]
    attached = {a[0]: a[1] for a in mail.attachments}
    assert attached[names[0]][:5] == b"%PDF-"
    [week] = tables(attached[names[1]])["headline"]  # the tidy tables, as downloaded
    assert (week["cluster"], week["week"], week["complete"]) == ("c1", "2026-W47", "true")
    send_weekly_reports("2026-W47")  # a retry, or a second beat
    assert len(mailoutbox) == 1 and ReportDelivery.objects.count() == 1


@override_settings(KUAE_REPORT_EMAILS=[])
def test_no_recipients_no_mail(mailoutbox, cluster):
    send_weekly_reports("2026-W47")
    assert mailoutbox == [] and not ReportDelivery.objects.exists()


def test_beat_sends_it_on_monday_morning():
    entry = beat_schedule()["weekly-report"]
    assert entry["task"] == "apps.reports.tasks.send_weekly_reports"
    assert isinstance(entry["schedule"], crontab) and entry["schedule"].day_of_week == {1}
