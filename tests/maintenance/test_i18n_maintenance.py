"""The maintenance pages in Chinese (docs/pages.md, Language): the calendar with its booking
form (refusing a field, and naming the running jobs it would touch) and a window's page — no
English left but the page's own data; the values and the API stay English."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.models import Node
from apps.jobs.models import Job
from tests.conftest import PERSONAS
from tests.i18n_pages import CHINESE, chinese_page, english_left
from tests.maintenance.conftest import book

pytestmark = pytest.mark.django_db


def data_of(fleet) -> list[str]:  # noqa: ANN001
    """What the maintenance pages show of their own: hosts, racks, jobs, people, reasons."""
    hosts = list(Node.objects.values_list("hostname", flat=True))
    racks = list(Node.objects.values_list("rack", flat=True))
    jobs = list(Job.objects.values_list("name", flat=True))
    return [*hosts, *racks, *jobs, *PERSONAS, "c1", "firmware upgrade", "gpu[001-016]"]


def local(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M")


def test_the_calendar_and_a_window_in_chinese(client, users, fleet, cluster):  # noqa: ANN001
    window = book(cluster, "n[05-06]", minutes=90)
    book(cluster, "n07", start=timezone.now() + dt.timedelta(days=2))
    client.force_login(users["otto"])
    html = chinese_page(client, "/maintenance/")
    assert "维护" in html and "预订窗口" in html and "进行中" in html and "即将开始" in html
    assert english_left(html, data_of(fleet)) == []
    page = chinese_page(client, f"/maintenance/{window.pk}/")
    assert f"维护窗口 #{window.pk}" in page and "立即结束" in page and "已静默告警" in page
    assert english_left(page, data_of(fleet)) == []


def test_the_booking_form_refuses_and_warns_in_chinese(client, users, fleet):  # noqa: ANN001
    client.force_login(users["otto"])
    now = timezone.now()
    times = {"start": local(now), "end": local(now + dt.timedelta(hours=2))}
    refused = client.post(
        "/maintenance/",
        {"cluster": "c1", "nodes": "", "racks": "", "reason": "x"} | times,
        **CHINESE,
    )
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "请填写要维护的节点（或机柜）" in html
    assert english_left(html, [*data_of(fleet), "x"]) == []
    warned = client.post(
        "/maintenance/",
        {"cluster": "c1", "nodes": "n[00-01]", "racks": "", "reason": "firmware upgrade"} | times,
        **CHINESE,
    ).content.decode()
    assert "不会通知 Slurm" in warned and "确定，仅在 KUAE 中预订" in warned
    assert english_left(warned, data_of(fleet)) == []


def test_the_api_stays_english(api, fleet, cluster):  # noqa: ANN001
    window = book(cluster, "n05")
    body = api("otto").get(f"/api/v1/maintenance/{window.pk}/", **CHINESE).json()
    assert body["status"] == "active" and body["reason"] == "firmware upgrade"
