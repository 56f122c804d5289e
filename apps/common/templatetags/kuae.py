"""Template helpers: UTC times with a relative hint, percentages, durations, sort links."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from urllib.parse import quote

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext
from markdown_it import MarkdownIt

from apps.common import node_grid
from apps.common.timeutil import ago

register = template.Library()


@register.simple_tag
def when(value: dt.datetime | None, now: dt.datetime | None = None) -> str:
    """`<time>` in UTC plus a relative hint that the page's script keeps current."""
    if value is None:
        return mark_safe('<span class="muted">—</span>')
    now = now or timezone.now()
    utc = value.astimezone(dt.UTC)
    return format_html(
        '<time datetime="{}" title="{}">{}</time> <span class="rel" data-since="{}">{}</span>',
        utc.isoformat(),
        utc.strftime("%Y-%m-%d %H:%M:%S UTC"),
        utc.strftime("%m-%d %H:%M"),
        utc.isoformat(),
        ago(value, now),
    )


@register.filter
def pct(value: float | None, digits: int = 1) -> str:
    """0.4321 → '43.2%'; None → '—'."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value * 100:.{digits}f}%"


@register.filter
def seconds(value: float | None) -> str:
    """A duration in seconds, compact: '42 s', '7 min', '3.5 h', '2.1 d'."""
    if value is None:
        return "—"
    value = float(value)
    if value < 90:
        return f"{value:.0f} s"
    if value < 5400:
        return f"{value / 60:.0f} min"
    if value < 172800:
        return f"{value / 3600:.1f} h"
    return f"{value / 86400:.1f} d"


@register.filter
def num(value: float | None, digits: int = 0) -> str:
    """Thousands separators; '—' for missing."""
    if value is None:
        return "—"
    try:
        return f"{float(value):,.{int(digits)}f}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def metric(metrics: dict | None, key: str) -> object:
    """A value from a GPU's metrics dict."""
    return (metrics or {}).get(key)


@register.simple_tag
def sort_link(label: str, key: str, current: str, base_query: str) -> str:
    """A column heading that sorts by `key`, toggling direction, with an arrow when active."""
    descending = current == f"-{key}"
    target = key if descending or current != key else f"-{key}"
    arrow = " ▲" if current == key else (" ▼" if descending else "")
    query = f"{base_query}&" if base_query else ""
    return format_html('<a href="?{}sort={}">{}{}</a>', query, target, label, arrow)


STATE_GLYPHS = {"healthy": "", "suspect": "?", "drained": "−", "down": "×", "maintenance": "M"}


@register.filter
def glyph(state: str) -> str:
    """A shape for a state, so colour is never the only signal."""
    return STATE_GLYPHS.get(state, "")


class _Titles:
    """The words of a grid's tile titles in the page's language, each looked up once: a node
    state's label (its slug capitalised, as the states' choices say it), a result's word,
    " · in a job"; and where a node's page is."""

    def __init__(self) -> None:
        self.words: dict[str, str] = {}
        self.in_a_job = " · " + gettext("in a job")
        self.prefix = reverse("node-list")

    def said(self, word: str, *, state: bool = False) -> str:
        """The word (a state's label when `state`) in the page's language."""
        if word not in self.words:
            self.words[word] = gettext(word.capitalize() if state else word)
        return self.words[word]

    def link(self, t: object, busy: bool | None, unverified: str | None) -> str:
        """One node's tile as a link to its page (state colour and glyph, worst check
        result, busy mark, hover text), every value escaped."""
        hostname, state = t.hostname, t.state  # type: ignore[attr-defined]
        reason, why = getattr(t, "reason", ""), getattr(t, "why", "")
        worst = getattr(t, "worst", "pass")
        in_job = getattr(t, "busy", False) if busy is None else busy
        title = f"{hostname} · {self.said(state, state=True)}" + (f" · {reason}" if reason else "")
        title += (f" · {self.said(worst)}: {why}" if why else "") + (
            self.in_a_job if busy is None and in_job else ""
        )
        classes = f"tile state-{state}" + (" busy" if in_job else "")
        classes += f" worst-{worst}" if worst != "pass" else ""
        if unverified and state == "healthy":
            classes += " unverified"
            title += f" · {unverified}"
        mark = "!" if worst == "fail" else STATE_GLYPHS.get(state, "")
        return (
            f'<a class="{escape(classes)}" href="{self.prefix}{quote(hostname)}/" '
            f'title="{escape(title)}">{escape(mark)}</a>'
        )


@register.simple_tag
def node_rack(
    tiles: list, name: str = "", busy: bool | None = None, unverified: str | None = None
) -> str:
    """One rack of a node grid in its compact form (apps/common/node_grid.py;
    docs/pages.md, Node grids): its nodes' names as a hostlist and a character each, from
    which the page's script draws the plain tiles, and the tiles that need attention as
    links. Tiles have `hostname` and `state`, and may have `reason`, `busy`, `worst`,
    `why`; `busy` given here applies to every tile. `unverified` (e.g. "unverified:
    checks stale 4 min") marks every healthy tile as shown on stale evidence
    (docs/operations.md, Watching the watcher): a hatched look and the words in its title,
    not a state. A rack whose names make no hostlist is sent whole."""
    titles = _Titles()
    codes, sent = [], []
    for t in tiles:
        if node_grid.plain(t):
            in_job = getattr(t, "busy", False) if busy is None else busy
            codes.append(node_grid.BUSY if in_job else node_grid.PLAIN)
        else:
            codes.append(node_grid.SENT)
            sent.append(titles.link(t, busy, unverified))
    hosts = node_grid.hostlist([t.hostname for t in tiles]) if len(sent) < len(tiles) else None
    if hosts is None:
        sent = [titles.link(t, busy, unverified) for t in tiles]
        data = ""
    else:
        data = f' data-hosts="{hosts}" data-tiles="{node_grid.runs("".join(codes))}"'
    label = format_html('<span class="rack-name">{}</span>', name) if name else ""
    return mark_safe(f'<div class="rack"{data}>{label}{"".join(sent)}</div>')  # noqa: S308


@register.simple_tag
def tile_words(unverified: str | None = None, in_a_job: bool = False) -> str:
    """The words of the tiles the page's script draws, in the page's language, once a page
    (docs/pages.md, Node grids): the healthy state's label, " · in a job" where a tile marked
    busy says so (the overview), the unverified words, and where a node's page is."""
    words = {
        "healthy": gettext("Healthy"),
        "in_job": " · " + gettext("in a job") if in_a_job else "",
        "prefix": reverse("node-list"),
    }
    if unverified:  # absent on fresh evidence: the page then says nothing of it
        words["unverified"] = unverified
    return format_html('<span hidden data-tile-words="{}"></span>', json.dumps(words))


@register.filter
def plain_tiles(racks: list) -> int:
    """How many tiles of a grid's racks ((rack, tiles) pairs) the page's script draws."""
    return node_grid.plain_count(racks)


_TICKED = re.compile(r"`([^`\n]{1,300})`")


@register.filter(needs_autoescape=True)
def code_ticks(text: str | None, autoescape: bool = True) -> str:
    """Text whose `backticked` names (a function, a collective: how a hang's verdict names
    where a rank waits) are shown as code, the rest escaped."""
    value = escape(text or "") if autoescape else (text or "")
    return mark_safe(_TICKED.sub(r"<code>\1</code>", str(value)))  # noqa: S308 - escaped above


# CommonMark without raw HTML: a `<script>` in a description is text, shown as written;
# links only to http(s)/mailto/relative addresses (markdown-it's own check refuses
# javascript:, vbscript:, file: and data:), no images; headings stay the text they are
# (the page's own headings give its outline); a line break is a break.
_MARKDOWN = MarkdownIt("js-default", {"html": False, "breaks": True, "linkify": False}).disable(
    ["image", "heading", "lheading"]
)


@register.filter
def markdown(text: str | None) -> str:
    """Text written with Markdown (an incident's description, a timeline entry, a
    postmortem: `load_batch`, **suspect**) as HTML, everything in it escaped: the app's
    generated words and a person's alike (docs/pages.md, Words a person uses)."""
    if not text:
        return ""
    html = _MARKDOWN.render(str(text))
    # a link in someone's text takes no referrer and no endorsement with it
    html = html.replace("<a href=", '<a rel="noopener noreferrer nofollow" href=')
    return mark_safe(f'<div class="md">{html}</div>')  # noqa: S308 - raw HTML is off: escaped
