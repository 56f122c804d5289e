"""The node grids' compact form (docs/pages.md, Node grids). Pure.

A grid of 12,800 nodes as 12,800 links is megabytes of HTML; most of them are healthy nodes
whose tile says nothing but their name. So a rack is sent as its nodes' names in one Slurm
hostlist (`r001n[00-15]`) and one character a node, and the page's script
(static/js/app.js) draws the plain tiles from them; the tiles that need attention (a state
other than healthy, a reason, a check that does not pass) are sent as the links they were,
so they work, and read, without the script. The characters, in the rack's order:

    .  a plain tile            +  a plain tile of a node in a job
    !  the next tile sent as a link

and a run of three or more of one character is written as its length and the character
(`13.` is thirteen plain tiles).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

PLAIN, BUSY, SENT = ".", "+", "!"

_NUMBERED = re.compile(r"^(.*?)([0-9]+)([^0-9]*)$")
_UNSAFE = re.compile(r"[\[\],\s\"'<>&]")  # never in a hostname; a rack holding one is sent whole


def plain(tile: object) -> bool:
    """Whether the script may draw the tile: a healthy node, no reason given for its state,
    every check passing (nothing in its title but its name and state)."""
    return (
        getattr(tile, "state", "") == "healthy"
        and not getattr(tile, "reason", "")
        and getattr(tile, "worst", "pass") == "pass"
        and not getattr(tile, "why", "")
    )


def plain_count(racks: Iterable[tuple[str, Sequence[object]]]) -> int:
    """How many tiles of a grid (rack, tiles) the script draws."""
    return sum(plain(t) for _, tiles in racks for t in tiles)


def hostlist(names: Sequence[str]) -> str | None:
    """The names, in their order, as a Slurm hostlist that `apps.common.hostnames.Hostlists`
    (and the page's script) expands back to them: consecutive names that differ only in
    their last number, of one width, share a bracket (`r001n[00-07,09]`). None when a name
    could not be written in one (a bracket, a comma: never in a hostname)."""
    if any(_UNSAFE.search(n) or not n for n in names):
        return None
    parts: list[str] = []
    group: tuple[str, str, int] | None = None  # prefix, suffix, width of the open bracket
    ranges: list[list[int]] = []

    def close() -> None:
        if group is None:
            return
        prefix, suffix, width = group
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            parts.append(f"{prefix}{ranges[0][0]:0{width}d}{suffix}")
            return
        body = ",".join(
            f"{lo:0{width}d}" if lo == hi else f"{lo:0{width}d}-{hi:0{width}d}" for lo, hi in ranges
        )
        parts.append(f"{prefix}[{body}]{suffix}")

    for name in names:
        match = _NUMBERED.match(name)
        if match is None:
            close()
            group, ranges = None, []
            parts.append(name)
            continue
        prefix, digits, suffix = match.groups()
        key, number = (prefix, suffix, len(digits)), int(digits)
        if key == group and number == ranges[-1][1] + 1:
            ranges[-1][1] = number
        elif key == group and number > ranges[-1][1]:
            ranges.append([number, number])
        else:
            close()
            group, ranges = key, [[number, number]]
    close()
    return ",".join(parts)


def runs(codes: str) -> str:
    """`codes` with each run of three or more of one character as its length and the
    character: '.......+' → '7.+'."""
    return re.sub(r"(.)\1{2,}", lambda m: f"{len(m.group())}{m.group(1)}", codes)


_JSON_ESCAPES = {ord(">"): "\\u003E", ord("<"): "\\u003C", ord("&"): "\\u0026"}


def json_script(value: object, element_id: str) -> SafeString:
    """`value` in a `<script type="application/json">` as Django's `json_script` writes it
    (`<`, `>`, `&` escaped), without the spaces after its commas and colons: a grid's data
    is thousands of short lists."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False).translate(_JSON_ESCAPES)
    return format_html(
        '<script id="{}" type="application/json">{}</script>',
        element_id,
        mark_safe(text),  # noqa: S308
    )
