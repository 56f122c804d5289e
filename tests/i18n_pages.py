"""Reading a page in Chinese (docs/pages.md, Language): the page as a Chinese browser gets
it, and the English a Chinese reader would see on it, its own data (hostnames, job names,
incident titles …) aside — the whole page, header, pager and time hints included."""

from __future__ import annotations

from collections.abc import Iterable

from django.test import Client

from tests.i18n_check import visible_english

CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def chinese_page(client: Client, url: str, status: int = 200) -> str:
    """The page at `url` as a Chinese browser gets it."""
    response = client.get(url, **CHINESE)
    assert response.status_code == status, (url, response.status_code)
    return response.content.decode()


def english_left(html: str, data_words: Iterable[str] = ()) -> list[str]:
    """The English words a Chinese reader sees on this page, less its own data."""
    return visible_english(html, data_words)
