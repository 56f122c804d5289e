"""The nodes list and the drain confirmation in Chinese (docs/pages.md, Language): no English
left but the page's own data; the English pages as they were."""

from __future__ import annotations

import pytest

from apps.fleet.models import Node
from apps.jobs.models import Job
from tests.i18n_check import visible_english

pytestmark = pytest.mark.django_db

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def _data(nodes: list[Node]) -> list[str]:
    return ["gpu", "c1", "mia", "otto", *{n.rack for n in nodes if n.rack}]


def test_the_nodes_list_reads_in_chinese(client, users, nodes):
    client.force_login(users["mia"])
    html = client.get("/nodes/", **ZH).content.decode()
    assert not visible_english(html, _data(nodes))
    assert "已排空" in html and ">主机" in html
    english = client.get("/nodes/").content.decode()
    assert "No nodes match." not in english and ">Drained</span>" in english


def test_the_drain_confirmation_reads_in_chinese(client, users, nodes, job: Job):
    client.force_login(users["otto"])
    host = job.nodes.first().hostname
    response = client.post(
        f"/nodes/{host}/state/", {"state": "drained", "reason": "flaky NVLink"}, **ZH
    )
    html = response.content.decode()
    assert response.status_code == 200 and "将会发生" in html
    assert not visible_english(html, [*_data(nodes), job.name, "flaky NVLink"])
    english = client.post(f"/nodes/{host}/state/", {"state": "drained", "reason": "flaky"})
    assert "What happens:" in english.content.decode()


def test_messages_after_a_state_change_read_in_chinese(client, users, nodes):
    client.force_login(users["otto"])
    page = client.post(
        "/nodes/gpu000/state/", {"state": "", "reason": ""}, follow=True, **ZH
    ).content.decode()
    assert "未做更改：gpu000 仍为健康。" in page
