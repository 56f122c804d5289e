"""The pages' language (docs/pages.md, Language): the browser's Accept-Language, a person's
own setting over it, the header's switch (saved to a signed-in person), `<html lang>`
following it, and the API the same in either language."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from tests.i18n_check import visible_english

pytestmark = pytest.mark.django_db

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en-gb,en;q=0.9"}


def test_the_browser_asking_for_chinese_gets_the_chinese_navigation(client, users, nodes):
    client.force_login(users["mia"])
    page = client.get("/nodes/", **ZH).content.decode()
    assert '<html lang="zh-hans">' in page
    assert ">节点</a>" in page and ">故障</a>" in page and "退出登录" in page
    assert ">Nodes</a>" not in page
    english = client.get("/nodes/", **EN).content.decode()
    assert '<html lang="en-gb">' in english and ">Nodes</a>" in english


def test_the_persons_setting_wins_over_an_english_browser(client, users, nodes):
    mia = users["mia"]
    mia.language = "zh-hans"
    mia.save(update_fields=["language"])
    client.force_login(mia)
    page = client.get("/nodes/", **EN).content.decode()
    assert '<html lang="zh-hans">' in page and ">节点</a>" in page
    # and an English setting over a Chinese browser
    mia.language = "en-gb"
    mia.save(update_fields=["language"])
    page = client.get("/nodes/", **ZH).content.decode()
    assert '<html lang="en-gb">' in page and ">Nodes</a>" in page


def test_the_switch_changes_the_language_and_saves_it_to_the_person(client, users, nodes):
    client.force_login(users["otto"])
    response = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/nodes/"}, **EN)
    assert response.status_code == 302 and response["Location"] == "/nodes/"
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    users["otto"].refresh_from_db()
    assert users["otto"].language == "zh-hans"
    page = client.get("/nodes/", **EN).content.decode()
    assert '<html lang="zh-hans">' in page and ">节点</a>" in page
    # a fresh browser (no cookie) still gets the person's choice
    client.cookies.clear()
    client.force_login(users["otto"])
    assert ">节点</a>" in client.get("/nodes/", **EN).content.decode()


def test_the_switch_works_before_signing_in_with_a_cookie_only(client, users):
    response = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/login/"})
    assert response.status_code == 302
    page = client.get("/login/", **EN).content.decode()
    assert '<html lang="zh-hans">' in page and "用户名" in page
    assert client.post("/i18n/setlang/", {"language": "xx", "next": "/login/"}).status_code == 302


def test_the_header_offers_both_languages_each_in_its_own_words(client, users, nodes):
    client.force_login(users["mia"])
    page = client.get("/nodes/", **ZH).content.decode()
    assert 'action="/i18n/setlang/"' in page
    assert 'value="en-gb" lang="en-gb" aria-pressed="false">English</button>' in page
    assert 'value="zh-hans" lang="zh-hans" aria-pressed="true">简体中文</button>' in page
    assert 'href="/settings/"' in page


def test_my_settings_sets_and_clears_the_language(client, users):
    client.force_login(users["erin"])
    page = client.get("/settings/", **ZH)
    assert page.status_code == 200
    assert not visible_english(page.content.decode(), ["erin", "English", "gpu"])
    response = client.post("/settings/", {"language": "zh-hans"}, **EN)
    assert response.status_code == 302
    users["erin"].refresh_from_db()
    assert users["erin"].language == "zh-hans"
    assert "已保存" in client.get("/settings/", **EN).content.decode()
    response = client.post("/settings/", {"language": ""}, **EN)
    users["erin"].refresh_from_db()
    assert users["erin"].language == ""
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == ""  # deleted
    assert ">Nodes</a>" in client.get("/settings/", **EN).content.decode()
    bad = client.post("/settings/", {"language": "fr"}, **EN)
    assert bad.status_code == 400 and b"language" in bad.content.lower()


def test_my_settings_needs_a_sign_in(client):
    response = client.get("/settings/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_api_answers_are_the_same_in_either_language(api, users, nodes):
    users["mia"].language = "zh-hans"
    users["mia"].save(update_fields=["language"])
    client = api("mia")
    english = client.get("/api/v1/nodes/", HTTP_ACCEPT_LANGUAGE="en")
    chinese = client.get("/api/v1/nodes/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert english.status_code == chinese.status_code == 200
    assert english.json() == chinese.json()
    missing_en = client.get("/api/v1/nodes/nope/", HTTP_ACCEPT_LANGUAGE="en")
    missing_zh = client.get("/api/v1/nodes/nope/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert missing_en.status_code == missing_zh.status_code == 404
    assert missing_en.json() == missing_zh.json()


def test_the_scripts_catalogue_is_served_in_chinese(client):
    body = client.get("/jsi18n/", **ZH).content.decode()
    assert json.dumps("%(n)s 分钟前")[1:-1] in body  # the catalogue's JSON escapes it
    assert json.dumps("（本地）")[1:-1] in body
