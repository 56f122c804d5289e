"""The search page in Chinese (docs/pages.md, Language): no English left but the page's data."""

from __future__ import annotations

import pytest

from apps.fleet.models import Node
from tests.i18n_check import visible_english

pytestmark = pytest.mark.django_db

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
DATA = ["gpu", "leaf-010", "llama", "c1", "r1", "r2", "mia"]


def test_search_reads_in_chinese(client, users, nodes):
    client.force_login(users["mia"])
    Node.objects.filter(hostname__in=["gpu001", "gpu002"]).update(switch="leaf-010")
    for query in ("", "leaf-010", "gpu00", "nothing-here", "gpu[9-1]"):
        response = client.get("/search/", {"q": query}, **ZH)
        html = response.content.decode()
        assert response.status_code == 200 and '<html lang="zh-hans">' in html
        racks = [n.rack for n in nodes if n.rack]
        # a hostlist parser's own message stays as written (the page's data)
        words = visible_english(html, [*DATA, query, *racks])
        if query == "gpu[9-1]":
            assert "不是有效的主机列表" in html
            continue
        assert not words, (query, words)
    assert "搜索" in html


def test_search_in_english_is_unchanged(client, users, nodes):
    client.force_login(users["mia"])
    html = client.get("/search/", {"q": "nothing-here"}).content.decode()
    assert "Nothing matches <b>nothing-here</b>." in html and ">Search</button>" in html
