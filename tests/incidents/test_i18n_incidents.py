"""The incident pages in Chinese (docs/pages.md, Language): the list, an incident's page, the
new-incident form refusing a field, a postmortem in the editor and as read, the action
items — no English left but the page's own data; values, slugs and the API stay English."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.incidents.models import Incident, TimelineEntry
from apps.incidents.postmortems import ActionSpec, postmortem_save, postmortem_submit
from apps.incidents.services import incident_open
from tests.conftest import PERSONAS
from tests.i18n_pages import CHINESE, chinese_page, english_left

pytestmark = pytest.mark.django_db


@pytest.fixture
def incident(users, job, nodes) -> Incident:  # noqa: ANN001
    """A sev2 GPU incident that stopped the job, recovered, with a comment."""
    now = timezone.now().replace(microsecond=0)
    created = incident_open(
        title="XID 79 on gpu001",
        cluster=job.cluster,
        category="gpu",
        severity="sev2",
        detected_at=now - dt.timedelta(hours=3),
        recovered_at=now - dt.timedelta(hours=1),
        job=job,
        nodes=[nodes[1]],
        interrupts_job=True,
        description="GPU 3 fell off the bus",
        actor="erin",
    )
    TimelineEntry.objects.create(
        incident=created, at=now, actor="otto", kind="note", text="reseated the riser"
    )
    return created


def data_of(incident: Incident) -> list[str]:
    """What the incident's pages show of its own: title, names, stored notes."""
    words = [incident.title, incident.cluster.name, incident.description, *PERSONAS]
    words += [incident.job.name if incident.job else ""]
    words += list(incident.nodes.values_list("hostname", flat=True))
    words += list(incident.timeline.values_list("text", flat=True))
    return words


def test_the_incident_list_in_chinese(client, users, incident):  # noqa: ANN001
    client.force_login(users["erin"])
    html = chinese_page(client, "/incidents/")
    assert "故障" in html and "严重级别" in html and "GPU 故障" in html  # the category's label
    assert english_left(html, data_of(incident)) == []
    assert 'value="sev2"' in html and 'value="gpu"' in html  # values stay slugs


def test_an_incident_page_in_chinese(client, users, incident):  # noqa: ANN001
    client.force_login(users["erin"])
    html = chinese_page(client, f"/incidents/{incident.pk}/")
    assert "恢复之路" in html and "损失 GPU 小时" in html and "待处理" in html
    assert 'data-mark="detected"' in html  # the marks keep their names
    assert english_left(html, data_of(incident)) == []


def test_the_new_incident_form_refuses_in_chinese(client, users, nodes):  # noqa: ANN001
    client.force_login(users["erin"])
    example = "gpu[001-004]"  # the hostlist example in the help text
    assert english_left(chinese_page(client, "/incidents/new/"), [example]) == []
    response = client.post(
        "/incidents/new/",
        {"title": "slow node", "cluster": "c1", "category": "slow_node", "severity": "sev3"}
        | {"nodes": "gpu999", "interrupts_job": "on"},
        **CHINESE,
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "c1 中没有这些节点：gpu999" in html and "请填写它中断的作业" in html
    assert english_left(html, ["slow node", "c1", "gpu999", example]) == []


def test_a_postmortem_in_chinese(client, users, incident):  # noqa: ANN001
    client.force_login(users["erin"])
    editor = chinese_page(client, f"/incidents/{incident.pk}/postmortem/")
    assert "复盘" in editor and "添加改进项" in editor and 'aria-label="内容, 第 1 行"' in editor
    assert english_left(editor, data_of(incident)) == []
    due = timezone.now().date() - dt.timedelta(days=3)
    postmortem = postmortem_save(
        incident=incident,
        by=users["erin"],
        summary="a riser came loose",
        root_cause="vibration",
        category="gpu",
        contributing_factors="",
        timeline=[],
        action_items=[ActionSpec("reseat risers on rack r0", "otto")],
    )
    postmortem.action_items.update(due=due)
    postmortem_submit(postmortem=postmortem, by=users["erin"])
    client.force_login(users["eve"])  # another engineer reviews it
    read = chinese_page(client, f"/incidents/{incident.pk}/postmortem/")
    assert "评审" in read and "已逾期" in read and "评审中" in read
    words = [*data_of(incident), "a riser came loose", "vibration", "reseat risers on rack r0"]
    assert english_left(read, words) == []


def test_a_refused_postmortem_save_is_summed_up_in_chinese(client, users, incident):  # noqa: ANN001
    client.force_login(users["erin"])
    form = {"summary": "", "root_cause": "", "category": "gpu", "contributing_factors": ""}
    rows = {"tl-TOTAL_FORMS": "1", "tl-INITIAL_FORMS": "0", "tl-0-at": "nonsense"}
    rows |= {"tl-0-text": "drained", "ai-TOTAL_FORMS": "0", "ai-INITIAL_FORMS": "0"}
    response = client.post(f"/incidents/{incident.pk}/postmortem/", form | rows, **CHINESE)
    assert response.status_code == 400
    html = response.content.decode()
    assert "未保存：有 1 处需要修改" in html and "时间线 1，时间" in html
    assert english_left(html, [*data_of(incident), "drained", "nonsense"]) == []


def test_action_items_in_chinese(client, users, incident):  # noqa: ANN001
    postmortem_save(
        incident=incident,
        by=users["erin"],
        summary="",
        root_cause="",
        category="gpu",
        contributing_factors="",
        timeline=[],
        action_items=[ActionSpec("add a riser check", "otto", timezone.now().date())],
    )
    client.force_login(users["otto"])
    html = chinese_page(client, "/action-items/")
    assert "改进项" in html and "标记完成" in html and 'value="overdue"' in html
    assert english_left(html, [*data_of(incident), "add a riser check"]) == []
    empty = chinese_page(client, "/action-items/?state=done")
    assert "没有“已完成”的改进项。" in empty


def test_unrouted_alerts_in_chinese(client, users, db):  # noqa: ANN001
    client.force_login(users["otto"])
    html = chinese_page(client, "/alerts/unrouted/")
    assert "未路由告警" in html and english_left(html) == []


def test_the_api_and_english_pages_stay_english(client, api, users, incident):  # noqa: ANN001
    body = api("erin").get(f"/api/v1/incidents/{incident.pk}/", **CHINESE).json()
    assert body["category"] == "gpu" and body["status"] == "open" and body["severity"] == "sev2"
    client.force_login(users["erin"])
    english = client.get(f"/incidents/{incident.pk}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "The road back" in english and "Faulty GPU" in english
