"""The job pages in Chinese (docs/pages.md, Language): the list, a job's page, its incidents
and ranks fragments and its progress chart — no English left but the page's own data."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from apps.fleet.choices import NodeState
from apps.incidents.services import incident_open
from apps.jobs.models import Job
from apps.jobs.services import checkpoints_record_bulk
from tests.conftest import PERSONAS
from tests.i18n_pages import CHINESE, chinese_page, english_left

pytestmark = pytest.mark.django_db


@pytest.fixture
def stopped(job: Job, nodes) -> Job:  # noqa: ANN001
    """The running job, stopped by an open incident on one of its nodes."""
    incident_open(
        title="XID 79 on gpu001",
        cluster=job.cluster,
        category="gpu",
        severity="sev1",
        detected_at=timezone.now() - dt.timedelta(minutes=20),
        job=job,
        nodes=[nodes[1]],
        interrupts_job=True,
        actor="erin",
    )
    return job


def data_of(job: Job) -> list[str]:
    """What a job's pages show of its own: names, hosts, the incident's title."""
    hosts = list(job.nodes.values_list("hostname", flat=True))
    # A node's state is fleet's word: its label is translated with the fleet pages.
    states = [str(NodeState(s).label) for s in job.nodes.values_list("state", flat=True)]
    return [job.name, job.cluster.name, "XID 79 on gpu001", *hosts, *PERSONAS, *states]


def test_the_job_list_in_chinese(client, users, stopped):  # noqa: ANN001
    client.force_login(users["mia"])
    html = chinese_page(client, "/jobs/")
    assert "作业" in html and "运行中" in html and "已中断" in html
    assert 'value="running"' in html  # the values stay slugs
    assert english_left(html, data_of(stopped)) == []


def test_a_job_page_in_chinese(client, users, stopped):  # noqa: ANN001
    client.force_login(users["mia"])
    html = chinese_page(client, f"/jobs/{stopped.pk}/")
    assert "检查点" in html and "当前 MFU" in html and "一个故障中断了此作业" in html
    left = english_left(html, data_of(stopped))
    assert left == [], left
    incidents = chinese_page(client, f"/jobs/{stopped.pk}/incidents/")
    assert "停机时间" in incidents and english_left(incidents, data_of(stopped)) == []
    ranks = chinese_page(client, f"/jobs/{stopped.pk}/ranks/")
    assert english_left(ranks, data_of(stopped)) == []


def test_the_progress_chart_in_chinese(client, users, job):  # noqa: ANN001
    checkpoints_record_bulk(
        job=job, items=[(1000, job.started_at + dt.timedelta(hours=6), 12.0, None)]
    )
    client.force_login(users["mia"])
    figure = client.get(f"/charts/jobs/{job.pk}/progress.json", **CHINESE).json()
    assert figure["layout"]["yaxis3"]["title"]["text"] == "损失"
    [strip] = [t for t in figure["data"] if t["name"] == "checkpoint"]  # names stay keys
    assert figure["layout"]["yaxis4"]["ticktext"] == ["检查点"]
    assert strip["hovertext"][0].startswith("第 1,000 步的检查点")
    english = client.get(f"/charts/jobs/{job.pk}/progress.json").json()
    assert english["layout"]["yaxis4"]["ticktext"] == ["checkpoints"]
