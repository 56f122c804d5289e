"""Template helpers: UTC times with a relative hint, percentages, durations, sort links."""

from __future__ import annotations

import datetime as dt
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


@register.simple_tag
def node_tiles(tiles: list, busy: bool | None = None, unverified: str | None = None) -> str:
    """One rack's node tiles (state colour and glyph, worst check result, busy mark, hover
    text), built in one pass: 1,280 tiles through template tags took most of a page's time.
    Tiles have `hostname` and `state`, and may have `reason`, `busy`, `worst`, `why`;
    `busy` given here applies to every tile. `unverified` (e.g. "unverified: checks stale
    4 min") marks every healthy tile as shown on stale evidence
    (docs/operations.md, Watching the watcher): a hatched look and the words in its
    title, not a state."""
    prefix = reverse("node-list")
    parts = []
    # The words of a title, in the page's language, looked up once for the rack: a node
    # state's label (its slug capitalised, as the states' choices say it), a result's word.
    words: dict[str, str] = {}
    in_a_job = " · " + gettext("in a job")

    def said(word: str, *, state: bool = False) -> str:
        if word not in words:
            words[word] = gettext(word.capitalize() if state else word)
        return words[word]

    for t in tiles:
        reason, why = getattr(t, "reason", ""), getattr(t, "why", "")
        worst = getattr(t, "worst", "pass")
        in_job = getattr(t, "busy", False) if busy is None else busy
        title = f"{t.hostname} · {said(t.state, state=True)}" + (f" · {reason}" if reason else "")
        title += (f" · {said(worst)}: {why}" if why else "") + (
            in_a_job if busy is None and in_job else ""
        )
        classes = f"tile state-{t.state}" + (" busy" if in_job else "")
        classes += f" worst-{worst}" if worst != "pass" else ""
        if unverified and t.state == "healthy":
            classes += " unverified"
            title += f" · {unverified}"
        mark = "!" if worst == "fail" else STATE_GLYPHS.get(t.state, "")
        parts.append(
            f'<a class="{escape(classes)}" href="{prefix}{quote(t.hostname)}/" '
            f'title="{escape(title)}">{escape(mark)}</a>'
        )
    return mark_safe("".join(parts))  # noqa: S308 - every value above is escaped


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
