"""Reading a page in Chinese (docs/pages.md, Language): the English a Chinese reader would
see on one page, its own data (hostnames, job names, incident titles …) aside.

Parts a page shares with every other — the header and base.html's notes, the pager, the
relative time hint beside each time — are translated on their own; while one of them is
still untranslated (its template in PENDING, or `ago` still English), its text is left out
here, so each page's test judges the page's own words. Once the shared part is translated,
it is read again with the rest, with no change to the tests.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

from django.test import Client
from django.utils import translation

from apps.common.timeutil import ago
from tests.common.test_i18n_catalogue import PENDING
from tests.i18n_check import visible_english

CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}

_SHELL = [  # base.html and includes/app_header.html
    re.compile(r'<header class="top">.*?</header>', re.S),
    re.compile(r'<a class="skip-link"[^>]*>.*?</a>', re.S),
    re.compile(r'<div class="stale-note"[^>]*>.*?</div>', re.S),
    re.compile(r'<div class="banner pipeline-stale".*?</div>', re.S),
]
_PAGER = [  # includes/pagination.html
    re.compile(r'<nav class="pager" aria-label="Pages">.*?</nav>', re.S),
    re.compile(r'<p class="muted small">[\d,]+ rows?</p>'),
]
_REL = re.compile(r'<span class="rel" data-since="[^"]*">[^<]*</span>')  # apps/common's `when`


def _ago_is_english() -> bool:
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    with translation.override("zh-hans"):
        return "ago" in ago(now - dt.timedelta(minutes=5), now)


def shared_parts_dropped(html: str) -> str:
    """`html` less the shared parts that are not translated yet (see the module)."""
    drop = []
    if "base.html" in PENDING or "includes/app_header.html" in PENDING:
        drop += _SHELL
    if "includes/pagination.html" in PENDING:
        drop += _PAGER
    if _ago_is_english():
        drop.append(_REL)
    for pattern in drop:
        html = pattern.sub(" ", html)
    return html


def chinese_page(client: Client, url: str, status: int = 200) -> str:
    """The page at `url` as a Chinese browser gets it."""
    response = client.get(url, **CHINESE)
    assert response.status_code == status, (url, response.status_code)
    return response.content.decode()


def english_left(html: str, data_words: Iterable[str] = ()) -> list[str]:
    """The English words a Chinese reader sees on this page, less its own data."""
    return visible_english(shared_parts_dropped(html), data_words)
