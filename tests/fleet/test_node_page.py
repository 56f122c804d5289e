"""The node page's "Set state" control (docs/on-call.md): it opens on no change."""

from __future__ import annotations

import re

import pytest

from apps.fleet.models import Node, NodeStateChange

pytestmark = pytest.mark.django_db


def test_set_state_opens_on_no_change(client, users, nodes: list[Node]) -> None:  # noqa: ANN001
    client.force_login(users["otto"])
    page = client.get("/nodes/gpu000/").content.decode()
    select = re.search(r'<select name="state"[^>]*>(.*?)</select>', page, re.S)
    assert select is not None
    options = re.findall(r"<option[^>]*>[^<]*</option>", select.group(1))
    assert options[0] == '<option value="" selected>— no change —</option>'
    assert sum("selected" in o for o in options) == 1  # not "Drained" on a healthy node


def test_submitting_no_change_changes_nothing(client, users, nodes: list[Node]) -> None:  # noqa: ANN001
    client.force_login(users["otto"])
    before = NodeStateChange.objects.count()
    r = client.post("/nodes/gpu000/state/", {"state": "", "reason": ""}, follow=True)
    assert r.status_code == 200 and "Nothing changed" in r.content.decode()
    nodes[0].refresh_from_db()
    assert nodes[0].state == "healthy" and NodeStateChange.objects.count() == before


def test_a_state_still_needs_its_reason(client, users, nodes: list[Node]) -> None:  # noqa: ANN001
    client.force_login(users["otto"])
    r = client.post("/nodes/gpu000/state/", {"state": "drained", "reason": ""}, follow=True)
    assert "Say why" in r.content.decode()
    nodes[0].refresh_from_db()
    assert nodes[0].state == "healthy"
