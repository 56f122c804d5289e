"""The health pages read in Chinese (docs/pages.md, Language): the health page as an operator
(the thresholds form) and as a manager (the thresholds read only), the topology page, the
overview's health line, a node's evidence and a job's suspects show no English but the
fleet's own data (hostnames, the messages the checks stored); the English pages as they were."""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.fleet.models import Node
from apps.health.detectors.fabric import port_target
from apps.health.models import CheckResult
from apps.health.services import runs_execute_now
from apps.telemetry.models import Port
from tests.health.conftest import backdate
from tests.i18n_data import stored_words
from tests.i18n_pages import chinese_page, english_left

pytestmark = pytest.mark.django_db


@pytest.fixture
def checked(cluster, fleet):  # noqa: ANN001, ANN201
    """h03 silent (a failing heartbeat), the checks run; h00–h07 behind leaf-01, whose
    ports fail, warn and pass by the fabric check."""
    backdate("h03", 600)
    runs_execute_now(cluster=cluster, kinds=["heartbeat", "thermal"], requested_by="test")
    Node.objects.filter(hostname__in=[f"h{i:02d}" for i in range(8)]).update(
        switch="leaf-01", pdu="pdu-a"
    )
    now = timezone.now()
    for i, status in enumerate(["fail", "warn", "pass", "error"]):
        node = Node.objects.get(hostname=f"h0{i}")
        Port.objects.create(
            node=node, device="mlx5_0", port=1, switch="leaf-01", state="ACTIVE", ts=now
        )
        CheckResult.objects.create(
            cluster=cluster, kind="fabric", target=port_target(node.hostname, "mlx5_0/1"),
            node=node, status=status, at=now, since=now, message="symbol errors 50/s > 10/s",
        )  # fmt: skip
    return fleet


def test_the_health_page_reads_in_chinese_as_an_operator_and_a_manager(client, users, checked):
    for who in ("otto", "mia"):  # an operator's thresholds form, a manager's table
        client.force_login(users[who])
        html = chinese_page(
            client, "/health/?cluster=c1&status=fail&status=warn&status=error&status=pass"
        )
        assert not english_left(html, stored_words()), (who, english_left(html, stored_words()))
        assert "阈值" in html and "心跳" in html and "高速网络（网卡端口）" in html
        assert ("保存阈值" in html) == (who == "otto")
    english = client.get("/health/?cluster=c1").content.decode()
    assert (
        "Thresholds" in english and "Fabric (NIC ports)" in english and "Not monitored" in english
    )


def test_messages_after_run_now_and_thresholds_read_in_chinese(
    client, users, checked, django_capture_on_commit_callbacks
):
    client.force_login(users["otto"])
    with django_capture_on_commit_callbacks(execute=False):
        page = client.post(
            "/health/run/",
            {"cluster": "c1", "kind": "sdc"},
            follow=True,
            HTTP_ACCEPT_LANGUAGE="zh-hans",
        ).content.decode()
    assert "静默数据损坏 (SDC)" in page and "Queued" not in page
    assert not english_left(page, stored_words()), english_left(page, stored_words())


def test_the_topology_page_reads_in_chinese(client, users, checked):
    client.force_login(users["mia"])
    html = chinese_page(client, "/topology/?cluster=c1")
    assert "交换机" in html and "leaf-01" in html and "端口" in html
    assert not english_left(html, stored_words()), english_left(html, stored_words())
    english = client.get("/topology/?cluster=c1").content.decode()
    assert "Switches" in english and "not checked" in english


def test_the_fragments_read_in_chinese(client, users, checked):
    client.force_login(users["mia"])
    job = checked["job"]
    for url in (
        "/health/summary/?cluster=c1",
        "/health/nodes/h03/evidence/",
        "/health/nodes/h00/evidence/",
        "/health/nodes/h10/evidence/",
        f"/health/jobs/{job.pk}/suspects/",
    ):
        html = chinese_page(client, url)
        assert not english_left(html, stored_words()), (url, english_left(html, stored_words()))
    assert "项检查未通过" in chinese_page(client, "/health/nodes/h03/evidence/")
    assert "心跳 失败" in chinese_page(client, f"/health/jobs/{job.pk}/suspects/")
