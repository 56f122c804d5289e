"""The repairs pages in Chinese (docs/pages.md, Language): the board, a repair with its steps
and evidence, the node page's banner — no English left but the page's own data; the stored
steps and the API stay English."""

from __future__ import annotations

import pytest

from apps.fleet.choices import NodeState
from apps.fleet.models import Node
from apps.repairs.models import Repair
from apps.repairs.services import repairs_sync
from tests.conftest import PERSONAS
from tests.i18n_pages import CHINESE, chinese_page, english_left
from tests.repairs.conftest import drain

pytestmark = pytest.mark.django_db


def data_of(repair: Repair) -> list[str]:
    """What a repair's pages show of its own: hosts, reason, notes, evidence, people, and the
    burn-in's stored note."""
    hosts = list(Node.objects.values_list("hostname", flat=True))
    states = [str(label) for _, label in NodeState.choices]  # fleet's words (its own pages)
    evidence = [f"{e.get('kind')} {e.get('target')} {e.get('message')}" for e in repair.evidence]
    notes = [s.get("note", "") for s in repair.steps]
    return [*hosts, *states, *evidence, *notes, *PERSONAS, "c1", repair.reason, repair.burn_in_note]


def test_the_board_and_a_repair_in_chinese(client, users, fleet):  # noqa: ANN001
    drain("n01", "XID 48: double-bit ECC")
    repairs_sync()
    repair = Repair.objects.get()
    client.force_login(users["erin"])
    answer = client.post(
        f"/repairs/{repair.pk}/step/",
        {"action": "reseat", "note": "riser reseated", "ticket": "CASE-7"},
        **CHINESE,
    )
    assert answer.status_code == 302
    repair.refresh_from_db()
    assert repair.steps[0]["action"] == "reseat"  # the stored step keeps its value
    board = chinese_page(client, "/repairs/")
    assert "维修" in board and "恢复上线" in board and "重新插拔" in board
    assert f"已向维修 #{repair.pk} 添加步骤" in board  # the message, in Chinese
    assert english_left(board, [*data_of(repair), "CASE-7"]) == []
    page = chinese_page(client, f"/repairs/{repair.pk}/")
    assert f"维修 #{repair.pk}" in page and "添加步骤" in page
    assert english_left(page, [*data_of(repair), "CASE-7"]) == []


def test_a_return_to_burn_in_in_chinese(client, users, fleet):  # noqa: ANN001
    drain("n02")
    repairs_sync()
    repair = Repair.objects.get()
    client.force_login(users["otto"])
    client.post(f"/repairs/{repair.pk}/return/", {}, **CHINESE)
    repair.refresh_from_db()
    page = chinese_page(client, f"/repairs/{repair.pk}/")
    assert "老化测试" in page and "n02 正在老化测试" in page
    assert english_left(page, data_of(repair)) == []


def test_the_api_stays_english(api, fleet):  # noqa: ANN001
    drain("n01")
    repairs_sync()
    repair = Repair.objects.get()
    body = api("otto").get(f"/api/v1/repairs/{repair.pk}/", **CHINESE).json()
    assert body["status"] == "open"
